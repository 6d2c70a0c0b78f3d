# SPDX-License-Identifier: GPL-2.0
"""Flag counting, loss analysis and stall detection on synthetic pcaps built
with scapy: a download from 198.18.2.2:5001 to 198.18.0.2:40000 with known
ECN marks, a retransmission after three duplicate ACKs and a 1 s gap."""
import pytest
from scapy.all import IP, IPv6, TCP, Ether, wrpcap

from ecnproxy.analysis import pcapflow

C, S, CP, SP = "198.18.0.2", "198.18.2.2", 40000, 5001
MSS = 1000


# Explicit MAC addresses: without them scapy resolves an IPv6 destination's
# address by neighbour solicitation and waits for its timeout.
ETH = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}


def mk(t, src, sport, dst, dport, flags, seq, ack=0, tos=0, payload=0, v6=False):
    ip = IPv6(src=src, dst=dst, tc=tos) if v6 else IP(src=src, dst=dst, tos=tos)
    p = Ether(**ETH) / ip / TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack,
                           window=1000)
    if payload:
        p = p / (b"x" * payload)
    p.time = t
    return p


def download(path, v6=False, c=C, s=S):
    """Handshake with ECN, 10 data segments (ECT(0), #3 and #4 CE), the
    client echoes ECE, the server answers CWR; segment 6 is lost: three
    duplicate ACKs, then a fast retransmission; a 1.0 s gap before the last
    two segments (a stall); FIN."""
    cs, ss = 1000, 5000  # ISNs
    pk = []
    t = 0.0

    def cli(flags, seq, ack, tos=0, payload=0):
        pk.append(mk(t, c, CP, s, SP, flags, seq, ack, tos, payload, v6))

    def srv(flags, seq, ack, tos=0, payload=0):
        pk.append(mk(t, s, SP, c, CP, flags, seq, ack, tos, payload, v6))

    cli("SEC", cs, 0)                   # SYN ECE CWR
    t += 0.01
    srv("SAE", ss, cs + 1)              # SYN-ACK ECE
    t += 0.01
    cli("A", cs + 1, ss + 1)
    ect0, ce = 2, 3
    base = ss + 1
    # segments 0..5 delivered; 3 and 4 CE marked
    for i in range(6):
        t += 0.01
        srv("A", base + i * MSS, cs + 1, tos=ce if i in (3, 4) else ect0, payload=MSS)
        t += 0.01
        flags = "AE" if i >= 3 else "A"
        cli(flags, cs + 1, base + (i + 1) * MSS)
    # segment 6 lost before the capture; 7, 8, 9 arrive: 3 duplicate ACKs
    for i in (7, 8, 9):
        t += 0.01
        srv("AC" if i == 7 else "A", base + i * MSS, cs + 1, tos=ect0, payload=MSS)
        t += 0.01
        cli("AE", cs + 1, base + 6 * MSS)
    # fast retransmission of segment 6, then the ACK of everything
    t += 0.01
    srv("A", base + 6 * MSS, cs + 1, tos=ect0, payload=MSS)
    t += 0.01
    cli("A", cs + 1, base + 10 * MSS)
    # a 1 s gap: nothing delivered, then segments 10 and 11
    t += 1.0
    srv("A", base + 10 * MSS, cs + 1, tos=ect0, payload=MSS)
    t += 0.01
    srv("A", base + 11 * MSS, cs + 1, tos=ect0, payload=MSS)
    t += 0.01
    cli("A", cs + 1, base + 12 * MSS)
    t += 0.01
    srv("FA", base + 12 * MSS, cs + 1)
    t += 0.01
    cli("FA", cs + 1, base + 12 * MSS + 1)
    t += 0.01
    srv("A", base + 12 * MSS + 1, cs + 2)
    wrpcap(str(path), pk)


@pytest.fixture
def flow(tmp_path):
    p = tmp_path / "dl.pcap"
    download(p)
    flows = pcapflow.analyze(str(p), SP)
    assert list(flows) == [CP]
    return flows[CP]


def test_handshake(flow):
    assert flow["ecn_negotiated"]
    assert flow["syn_ece"] and flow["syn_cwr"] and flow["synack_ece"]
    assert not flow["synack_cwr"]
    assert flow["client"] == C and flow["server"] == S


def test_flag_counting(flow):
    s2c, c2s = flow["s2c"], flow["c2s"]
    assert flow["data_dir"] == "s2c"
    assert s2c["data"] == 12          # 11 first transmissions + 1 retransmission
    assert s2c["new_bytes"] == 12 * MSS
    assert s2c["ce"] == 2
    assert s2c["ect"] == 12
    assert s2c["ect_share"] == 1.0
    assert s2c["cwr"] == 1
    assert s2c["ece"] == 0
    assert c2s["ece"] == 6            # 3 after the marks, 3 duplicate ACKs
    assert c2s["ce"] == 0 and c2s["data"] == 0 and c2s["ect_share"] is None


def test_loss_analysis(flow):
    assert flow["s2c"]["retrans"] == 1
    assert flow["s2c"]["fast_retrans"] == 1
    assert flow["c2s"]["dupacks"] == 3   # three more ACKs of segment 6
    assert flow["s2c"]["dupacks"] == 0


def test_stall_detection(flow):
    assert flow["rtt"] == pytest.approx(0.01, abs=1e-6)
    assert flow["stall_threshold"] == pytest.approx(0.2)
    assert flow["stalls"] == 1
    assert flow["stall_time"] == pytest.approx(1.02, abs=1e-6)


def test_totals(flow):
    tot = pcapflow.totals({CP: flow})
    assert tot["ce"] == 2 and tot["ece"] == 6 and tot["cwr"] == 1
    assert tot["retrans"] == 1 and tot["fast_retrans"] == 1 and tot["dupacks"] == 3
    assert tot["stalls"] == 1 and tot["flows"] == 1 and tot["ecn_negotiated"] == 1


def test_ipv6(tmp_path):
    p = tmp_path / "dl6.pcap"
    download(p, v6=True, c="fd8e:c9b0:2a17::2", s="fd8e:c9b0:2a17:2::2")
    fl = pcapflow.analyze(str(p), SP)[CP]
    assert fl["s2c"]["ce"] == 2 and fl["c2s"]["ece"] == 6 and fl["stalls"] == 1


def test_stalls_function():
    # deliveries at 0.1, 0.2, 0.9 (gap 0.7), 1.0; threshold 0.3
    d = [(0.1, 10), (0.2, 20), (0.9, 30), (1.0, 40), (5.0, 41)]
    assert pcapflow.stalls(0.0, d, 40, 0.3) == (1, 0.7)
    assert pcapflow.stalls(None, d, 40, 0.3) == (0, 0.0)


def test_truncated_snaplen(tmp_path):
    """tcpdump -s 128 cuts the payload: lengths come from the IP header."""
    p = tmp_path / "full.pcap"
    download(p)
    raw = p.read_bytes()
    # rewrite with every packet cut to 70 bytes, as a snap length would
    import struct
    out = bytearray(raw[:24])
    off = 24
    while off < len(raw):
        sec, usec, incl, orig = struct.unpack_from("<IIII", raw, off)
        data = raw[off + 16:off + 16 + incl][:70]
        out += struct.pack("<IIII", sec, usec, len(data), orig) + data
        off += 16 + incl
    q = tmp_path / "cut.pcap"
    q.write_bytes(bytes(out))
    a = pcapflow.analyze(str(p), SP)[CP]
    b = pcapflow.analyze(str(q), SP)[CP]
    assert a == b
