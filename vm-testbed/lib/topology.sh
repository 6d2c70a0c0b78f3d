# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The thesis's six-node testbed, built from network namespaces inside the
# guest.  Source this file, then call tb_up; tb_down tears everything down.
#
#                 net0                     net1 (br1)                net2 (br2)
#   client eth0 ------- eth0 proxy eth1 ----+---- eth1 router eth2 ----+---- eth0 server
#   .0.2                .0.1      .1.2      |     .1.1        .2.1     |     .2.2
#                                        udp1 eth0 .1.3             udp2 eth0 .2.3
#
#   IPv4 198.18.N.H/24, IPv6 fd8e:c9b0:2a17:N::H/64 (N = net, H = host)
#   The bridges br1 and br2 live in a seventh namespace, "sw", which only
#   switches.  Default routes: client -> proxy; proxy, udp1 -> router;
#   server, udp2 -> router; the router reaches net0 through the proxy.
#
#   The router shapes both internal interfaces with HTB + RED (ECN):
#     download setup: eth1 (toward proxy/client) TB_RATE_LOW,  eth2 TB_RATE_HIGH
#     upload setup:   eth1 TB_RATE_HIGH, eth2 (toward server) TB_RATE_LOW
#   An optional netem delay (TB_DELAY_MS) sits on the server's eth0, a link
#   that carries no RED.
#
# Settings (environment, read by tb_up, which refuses a value it cannot use
# (tb_check_settings); defaults are the thesis's values):
#   TB_SETUP      download | upload                     (download)
#   TB_RATE_LOW   bottleneck rate                       (10mbit)
#   TB_RATE_HIGH  the other direction's rate            (100mbit)
#   TB_RED_LIMIT TB_RED_MIN TB_RED_MAX TB_RED_AVPKT TB_RED_BURST TB_RED_PROB
#                 RED parameters      (40000 2000 8000 1000 4 0.3)
#   TB_RED_ECN    1: mark ECT packets (RED "ecn"), 0: drop everything  (1)
#
#   RED under HTB never sees its queue go idle (HTB stops dequeuing an empty
#   leaf, so red_start_of_idle_period() never runs): after a burst its
#   average stays frozen.  Above TB_RED_MAX every Not-ECT packet is then
#   dropped, and a lone retransmission (never ECT) can be dropped at every
#   RTO, a stall of minutes.  Tests that check function rather than the
#   thesis's numbers call tb_red_functional before tb_up; measurements of
#   independent transfers (the matrix, the dupack benchmark and test) call
#   tb_red_reset (tb_fresh_transfer) before each one.
#   TB_OFFLOADS   off: TSO, GSO and GRO off on every device; on: all on (off)
#   TB_DELAY_MS   netem delay on the server's link, 0 for none          (0)
#   TB_ROUTER     plain: the proxy node only forwards; home: it is set up
#                 like an OpenWrt home router (tb_home_router below: fw4's
#                 default ruleset with drop_invalid, conntrack, IPv4
#                 masquerade toward net1, IPv6 routed through the same
#                 stateful firewall, an MSS clamp); the router then has no
#                 IPv4 route to net0, so IPv4 works only through the NAT
#                                                                      (plain)
#   TB_OFFLOAD_FLOWS 1: with TB_ROUTER=home, fw4's software flow offloading
#                 (flowtable ft + "flow offload @ft")                   (0)
#   TB_STATE      directory for pids and logs        (/tmp/tb-state)
#   TB_SLOW       how many times slower than the stock kernel the guest is:
#                 scales the polling limits below (tb_slow), 1 normally; make
#                 debugtest sets it for the KASAN/lockdep kernel       (1)
#   TB_MPTCP      1: a second, disjoint path from the client to the server
#                 for Multipath TCP (tb_mptcp_up below): a seventh node,
#                 mbox, between the client's eth1 and the server's eth1,
#                 shaped like the router; MPTCP endpoints and limits set (0)

TB_NODES="client proxy router server udp1 udp2"
TB_SW=sw
TB_V4=198.18
TB_V6=fd8e:c9b0:2a17

: "${TB_SETUP:=download}"
: "${TB_RATE_LOW:=10mbit}"
: "${TB_RATE_HIGH:=100mbit}"
: "${TB_RED_LIMIT:=40000}"
: "${TB_RED_MIN:=2000}"
: "${TB_RED_MAX:=8000}"
: "${TB_RED_AVPKT:=1000}"
: "${TB_RED_BURST:=4}"
: "${TB_RED_PROB:=0.3}"
: "${TB_RED_ECN:=1}"
: "${TB_OFFLOADS:=off}"
: "${TB_DELAY_MS:=0}"
: "${TB_ROUTER:=plain}"
: "${TB_OFFLOAD_FLOWS:=0}"
: "${TB_STATE:=/tmp/tb-state}"
: "${TB_SLOW:=1}"
: "${TB_MPTCP:=0}"
# The second path's node (TB_MPTCP=1); tb_down removes it whatever TB_MPTCP.
TB_MPTCP_NODES="mbox"

# Node -> (net, host) for every address the testbed assigns.
declare -A TB_IF_ADDR=(
	[client:eth0]=0.2 [proxy:eth0]=0.1
	[proxy:eth1]=1.2 [udp1:eth0]=1.3 [router:eth1]=1.1
	[router:eth2]=2.1 [server:eth0]=2.2 [udp2:eth0]=2.3
)
# The address by which other hosts reach each node.
declare -A TB_HOST=(
	[client]=0.2 [proxy]=1.2 [router]=1.1 [server]=2.2 [udp1]=1.3 [udp2]=2.3
)

tb_die() {
	echo "topology: $*" >&2
	return 1
}

# tb_slow N: N scaled by TB_SLOW, for the number of tries of a polling loop
# (for i in $(seq "$(tb_slow 100)"); do ...; sleep 0.1; done).
tb_slow() {
	echo $(($1 * TB_SLOW))
}

# tb_ns NODE CMD...: run CMD in NODE's namespace.
tb_ns() {
	local node=$1
	shift
	ip netns exec "$node" "$@"
}

# tb_addr NODE [4|6]: the address other hosts use to reach NODE.
tb_addr() {
	local h=${TB_HOST[$1]:-} fam=${2:-4}
	[ -n "$h" ] || tb_die "unknown node '$1'" || return
	tb_fmt_addr "$h" "$fam"
}

tb_fmt_addr() {
	local net=${1%.*} host=${1#*.}
	if [ "$2" = 6 ]; then
		echo "$TB_V6:$net::$host"
	else
		echo "$TB_V4.$net.$host"
	fi
}

# tb_is_int V MIN [MAX]: V is a decimal whole number from MIN to MAX (MAX
# absent: no upper bound).  Also testlib.sh's tb_knob_int.
tb_is_int() {
	[[ $1 =~ ^[0-9]{1,15}$ ]] && ((10#$1 >= $2)) && { [ -z "${3:-}" ] || ((10#$1 <= $3)); }
}

tb_check_settings() {
	case $TB_SETUP in download | upload) ;;
	*) tb_die "TB_SETUP must be download or upload, not '$TB_SETUP'" || return ;;
	esac
	case $TB_OFFLOADS in on | off) ;;
	*) tb_die "TB_OFFLOADS must be on or off, not '$TB_OFFLOADS'" || return ;;
	esac
	tb_is_int "$TB_DELAY_MS" 0 ||
		tb_die "TB_DELAY_MS must be a whole number of ms, not '$TB_DELAY_MS'" ||
		return
	case $TB_ROUTER in plain | home) ;;
	*) tb_die "TB_ROUTER must be plain or home, not '$TB_ROUTER'" || return ;;
	esac
	case $TB_OFFLOAD_FLOWS in 0) ;;
	1) [ "$TB_ROUTER" = home ] ||
		tb_die "TB_OFFLOAD_FLOWS=1 needs TB_ROUTER=home" || return ;;
	*) tb_die "TB_OFFLOAD_FLOWS must be 0 or 1, not '$TB_OFFLOAD_FLOWS'" || return ;;
	esac
	local v
	for v in TB_RATE_LOW TB_RATE_HIGH; do
		[[ ${!v} =~ ^[1-9][0-9]*[kmg]?bit$ ]] ||
			tb_die "$v must be a rate such as 10mbit, not '${!v}'" || return
	done
	for v in TB_RED_LIMIT TB_RED_MIN TB_RED_MAX TB_RED_AVPKT TB_RED_BURST; do
		tb_is_int "${!v}" 1 999999999 ||
			tb_die "$v must be a whole number of at least 1, not '${!v}'" || return
	done
	[[ $TB_RED_PROB =~ ^(0(\.[0-9]+)?|1(\.0*)?)$ ]] ||
		tb_die "TB_RED_PROB must be a probability from 0 to 1, not '$TB_RED_PROB'" ||
		return
	case $TB_RED_ECN in 0 | 1) ;;
	*) tb_die "TB_RED_ECN must be 0 or 1, not '$TB_RED_ECN'" || return ;;
	esac
	case $TB_MPTCP in 0 | 1) ;;
	*) tb_die "TB_MPTCP must be 0 or 1, not '$TB_MPTCP'" || return ;;
	esac
}

# Create a veth pair between two namespaces with the given names.  MACs are
# set explicitly (locally administered, unique): udev's persistent MAC policy
# would otherwise give every pair created under one name the same address.
TB_MAC_SEQ=0
tb_link() {
	local ns_a=$1 if_a=$2 ns_b=$3 if_b=$4
	TB_MAC_SEQ=$((TB_MAC_SEQ + 2))
	ip link add tbtmp-a address "$(printf '02:ec:9e:00:00:%02x' $TB_MAC_SEQ)" \
		type veth peer name tbtmp-b \
		address "$(printf '02:ec:9e:00:00:%02x' $((TB_MAC_SEQ + 1)))"
	ip link set tbtmp-a netns "$ns_a" name "$if_a"
	ip link set tbtmp-b netns "$ns_b" name "$if_b"
}

tb_offloads() {
	local ns=$1 dev=$2
	ip netns exec "$ns" ethtool -K "$dev" tso "$TB_OFFLOADS" \
		gso "$TB_OFFLOADS" gro "$TB_OFFLOADS" >/dev/null 2>&1 ||
		tb_die "ethtool -K $dev failed in $ns"
}

tb_ns_init() {
	local ns=$1
	ip netns add "$ns"
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
		net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.default.accept_ra=0 net.ipv6.conf.all.accept_ra=0
	ip -n "$ns" link set lo up
}

tb_addr_add() {
	local node=$1 dev=$2 a=${TB_IF_ADDR[$1:$2]}
	ip -n "$node" addr add "$(tb_fmt_addr "$a" 4)/24" dev "$dev"
	ip -n "$node" -6 addr add "$(tb_fmt_addr "$a" 6)/64" dev "$dev" nodad
	ip -n "$node" link set "$dev" up
}

# HTB + RED (+ECN) at RATE on the router's DEV.
tb_red() {
	local dev=$1 rate=$2
	tc -n router qdisc replace dev "$dev" root handle 1: htb default 1 r2q 100
	tc -n router class add dev "$dev" parent 1: classid 1:1 htb \
		rate "$rate" ceil "$rate"
	tb_red_qdisc add "$dev" "$rate"
}

# tb_red_args add|change DEV RATE: tc's arguments (a "tc -b" line) for
# the RED leaf under HTB class 1:1 of DEV.
tb_red_args() {
	local ecn=
	[ "$TB_RED_ECN" = 1 ] && ecn=" ecn"
	echo "qdisc $1 dev $2 parent 1:1 handle 10: red limit $TB_RED_LIMIT" \
		"min $TB_RED_MIN max $TB_RED_MAX avpkt $TB_RED_AVPKT" \
		"burst $TB_RED_BURST probability $TB_RED_PROB bandwidth $3$ecn"
}

# tb_red_qdisc add|change DEV RATE [NODE]: the RED leaf under HTB class 1:1
# (NODE: the router, or mbox for TB_MPTCP's second path).
tb_red_qdisc() {
	# shellcheck disable=SC2046 # the arguments are words without blanks
	tc -n "${4:-router}" $(tb_red_args "$1" "$2" "$3")
}

# tb_red_reset_cmds: tb_red_reset's two "tc -n router -b" lines, for a
# caller that resets RED between many runs without a shell each time
# (py/ecnproxy/guest/testbed.py, Testbed.red_reset).
tb_red_reset_cmds() {
	if [ "$TB_SETUP" = download ]; then
		tb_red_args change eth1 "$TB_RATE_LOW"
		tb_red_args change eth2 "$TB_RATE_HIGH"
	else
		tb_red_args change eth1 "$TB_RATE_HIGH"
		tb_red_args change eth2 "$TB_RATE_LOW"
	fi
}

# tb_red_reset: forget both RED queues' average, as an idle period would
# on a router whose RED sees one ("tc qdisc change" runs red_set_vars(),
# qavg = 0, and marks the empty queue idle; packet counters are kept).
# Call it between independent transfers so that one run's burst does not
# carry its frozen average (see above) into the next run.  One tc process:
# it stops at the first line that fails, and fails.
tb_red_reset() {
	tb_red_reset_cmds | tc -n router -b -
}

# tb_fresh_transfer: the next transfer starts as on a fresh testbed: client
# and server learn nothing from earlier connections (no route metrics:
# ssthresh, reordering) and RED's average is 0 (tb_red_reset).  For
# measurements of independent transfers on one topology.
tb_fresh_transfer() {
	local n
	for n in client server; do
		tb_ns "$n" sysctl -qw net.ipv4.tcp_no_metrics_save=1 || return
		tb_ns "$n" ip tcp_metrics flush all 2>/dev/null || true
	done
	tb_red_reset
}

tb_up() {
	local n dev cmds=
	tb_check_settings || return
	tb_down 2>/dev/null || true
	mkdir -p "$TB_STATE"

	# Every command is a guest process, and processes are slow under TCG:
	# the namespaces and veth pairs are one batch of ip, each namespace is
	# set up by one shell in it (tb_ns_setup), the routes by one ip each.
	for n in $TB_NODES $TB_SW; do
		cmds+="netns add $n"$'\n'
	done
	tb_link_cmd client eth0 proxy eth0
	tb_link_cmd proxy eth1 $TB_SW p1-proxy
	tb_link_cmd udp1 eth0 $TB_SW p1-udp1
	tb_link_cmd router eth1 $TB_SW p1-router
	tb_link_cmd router eth2 $TB_SW p2-router
	tb_link_cmd server eth0 $TB_SW p2-server
	tb_link_cmd udp2 eth0 $TB_SW p2-udp2
	ip -b - <<<"$cmds" || tb_die "cannot create the namespaces and links" ||
		return

	# the switch: two bridges, no IPv6 of its own
	cmds=
	for dev in br1 br2; do
		cmds+="link add $dev address 02:ec:9e:00:01:0${dev#br} type bridge stp_state 0 forward_delay 0 mcast_snooping 0"$'\n'
		cmds+="link set $dev up"$'\n'
	done
	for dev in p1-proxy p1-udp1 p1-router; do
		cmds+="link set $dev master br1 up"$'\n'
	done
	for dev in p2-router p2-server p2-udp2; do
		cmds+="link set $dev master br2 up"$'\n'
	done
	local sysctls="net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1"
	for dev in p1-proxy p1-udp1 p1-router p2-router p2-server p2-udp2; do
		sysctls+=" $(tb_dev_sysctls "$dev") net.ipv6.conf.$dev.disable_ipv6=1"
	done
	tb_ns_setup $TB_SW "$cmds" "$sysctls" \
		br1 br2 p1-proxy p1-udp1 p1-router p2-router p2-server p2-udp2 || return

	# the hosts: addresses, offloads, forwarding on proxy and router
	for n in $TB_NODES; do
		local devs= a
		cmds=
		sysctls=
		for dev in eth0 eth1 eth2; do
			a=${TB_IF_ADDR[$n:$dev]:-}
			[ -n "$a" ] || continue
			cmds+="addr add $(tb_fmt_addr "$a" 4)/24 dev $dev"$'\n'
			cmds+="addr add $(tb_fmt_addr "$a" 6)/64 dev $dev nodad"$'\n'
			cmds+="link set $dev up"$'\n'
			sysctls+=" $(tb_dev_sysctls "$dev")"
			devs+=" $dev"
		done
		case $n in proxy | router)
			sysctls+=" net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1" ;;
		esac
		# shellcheck disable=SC2086
		tb_ns_setup "$n" "$cmds" "$sysctls" $devs || return
	done

	# routes, once every link is up
	tb_route client 0.1
	tb_route proxy 1.1
	tb_route udp1 1.1
	tb_route server 2.1
	tb_route udp2 2.1
	# home: net0 is a private LAN behind the proxy's masquerade (IPv4)
	cmds="route add $TB_V6:0::/64 via $(tb_fmt_addr 1.2 6)"
	[ "$TB_ROUTER" = home ] ||
		cmds="route add $TB_V4.0.0/24 via $(tb_fmt_addr 1.2 4)"$'\n'"$cmds"
	ip -n router -b - <<<"$cmds" ||
		tb_die "cannot add the router's routes toward net0" || return
	if [ "$TB_ROUTER" = home ]; then
		tb_home_router || tb_die "cannot load the home router's ruleset" ||
			return
	fi

	if [ "$TB_SETUP" = download ]; then
		tb_red eth1 "$TB_RATE_LOW" && tb_red eth2 "$TB_RATE_HIGH"
	else
		tb_red eth1 "$TB_RATE_HIGH" && tb_red eth2 "$TB_RATE_LOW"
	fi || tb_die "cannot set up HTB/RED on the router" || return
	if [ "$TB_DELAY_MS" -gt 0 ]; then
		tc -n server qdisc add dev eth0 root netem \
			delay "${TB_DELAY_MS}ms" limit 100000
	fi
	if [ "$TB_MPTCP" = 1 ]; then
		tb_mptcp_up || tb_die "cannot set up the second (MPTCP) path" ||
			return
	fi
	tb_links_wait
}

# tb_links_wait: until every veth of the topology is operationally up (the
# kernel's link watch marks a new carrier up within about a second; until
# then the device's queue drops what is sent).  Every pair has one end in
# the switch or the proxy (or, with TB_MPTCP, mbox).  Only the topology's
# own devices count: a kernel with sit built in has a sit0, always down,
# in every namespace.
tb_links_wait() {
	local n i down
	for i in $(seq "$(tb_slow 100)"); do
		down=
		for n in $TB_SW proxy $([ "$TB_MPTCP" = 1 ] && echo mbox); do
			down+=$(ip -n "$n" -br link |
				awk '$1 ~ /^(eth|p[12]-|br)/ && $2 != "UP" {print " '"$n"':" $1}')
		done
		[ -z "$down" ] && return 0
		sleep 0.1
	done
	tb_die "links not up after $(tb_slow 10) s:$down"
}

# tb_link_cmd NS_A IF_A NS_B IF_B: appends to $cmds the ip command that
# creates the veth pair IF_A (in NS_A) - IF_B (in NS_B), with tb_link's
# addresses
tb_link_cmd() {
	TB_MAC_SEQ=$((TB_MAC_SEQ + 2))
	cmds+="link add $2 netns $1 address $(printf '02:ec:9e:00:00:%02x' $TB_MAC_SEQ)"
	cmds+=" type veth peer name $4 netns $3"
	cmds+=" address $(printf '02:ec:9e:00:00:%02x' $((TB_MAC_SEQ + 1)))"$'\n'
}

# tb_dev_sysctls DEV: tb_ns_init's defaults for a device that was in the
# namespace before they were set
tb_dev_sysctls() {
	echo "net.ipv6.conf.$1.accept_dad=0 net.ipv6.conf.$1.accept_ra=0"
}

# tb_ns_setup NS IP_CMDS SYSCTLS DEV...: in one shell in NS, tb_ns_init's
# sysctls and SYSCTLS, lo up, the ip batch IP_CMDS, then tb_offloads on
# each DEV
tb_ns_setup() {
	local ns=$1 ipcmds=$2 sysctls=$3 dev eth=
	shift 3
	for dev in "$@"; do
		eth+="ethtool -K $dev tso $TB_OFFLOADS gso $TB_OFFLOADS gro $TB_OFFLOADS >/dev/null 2>&1 || { echo 'topology: ethtool -K $dev failed in $ns' >&2; exit 1; }"$'\n'
	done
	ip netns exec "$ns" bash -s <<-EOF || tb_die "cannot set up namespace $ns"
	set -e
	sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 \
		net.ipv6.conf.default.accept_ra=0 net.ipv6.conf.all.accept_ra=0 $sysctls
	ip -b - <<'IPCMDS'
	link set lo up
	$ipcmds
	IPCMDS
	$eth
	EOF
}

tb_route() {
	local node=$1 gw=$2
	ip -n "$node" -b - <<-EOF
	route add default via $(tb_fmt_addr "$gw" 4)
	route add default via $(tb_fmt_addr "$gw" 6)
	EOF
}

# tb_bottleneck_dev: the router device that carries TB_RATE_LOW.
tb_bottleneck_dev() {
	if [ "$TB_SETUP" = download ]; then echo eth1; else echo eth2; fi
}

# tb_red_functional: RED's max_th at 3/4 of its limit, so that after the
# frozen average (see the settings above) a Not-ECT packet is dropped with
# probability <= TB_RED_PROB instead of always; RED still marks from
# TB_RED_MIN on.  For tests of function, not of the thesis's numbers.
tb_red_functional() {
	TB_RED_MAX=$((TB_RED_LIMIT * 3 / 4))
}

tb_down() {
	local f n
	for f in "$TB_STATE"/*.pid; do
		[ -e "$f" ] || continue
		kill "$(cat "$f")" 2>/dev/null || true
		rm -f "$f"
	done
	# one ip for all (-force: on past those that do not exist)
	for n in $TB_NODES $TB_MPTCP_NODES $TB_SW; do
		echo "netns del $n"
	done | ip -force -b - 2>/dev/null || true
}

# tb_tcp NODE [ecn=0|1|2] [sack=0|1] [ts=0|1] [cc=NAME]
tb_tcp() {
	local node=$1 kv key val
	shift
	for kv in "$@"; do
		key=${kv%%=*}
		val=${kv#*=}
		case $key in
		ecn) tb_ns "$node" sysctl -qw net.ipv4.tcp_ecn="$val" ;;
		sack) tb_ns "$node" sysctl -qw net.ipv4.tcp_sack="$val" ;;
		ts) tb_ns "$node" sysctl -qw net.ipv4.tcp_timestamps="$val" ;;
		cc)
			modprobe -q "tcp_$val" 2>/dev/null || true
			tb_ns "$node" sysctl -qw \
				net.ipv4.tcp_congestion_control="$val"
			;;
		*) tb_die "tb_tcp: unknown setting '$kv'" || return ;;
		esac || tb_die "tb_tcp: cannot set $kv on $node" || return
	done
}

# tb_bg NAME NODE CMD...: start CMD in NODE in the background; tb_down or
# tb_bg_stop NAME stops it.  Output goes to $TB_STATE/NAME.log.
tb_bg() {
	local name=$1 node=$2
	shift 2
	ip netns exec "$node" "$@" >"$TB_STATE/$name.log" 2>&1 &
	echo $! >"$TB_STATE/$name.pid"
}

tb_bg_stop() {
	local f=$TB_STATE/$1.pid pid sig=${2:-TERM} i
	[ -e "$f" ] || return 0
	pid=$(cat "$f")
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq "$(tb_slow 50)"); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$f"
}

# tb_cross_start RATE [down|up|both]: UDP cross traffic through the router,
# down = udp2 -> udp1 (same direction as a download), up = udp1 -> udp2.
tb_cross_start() {
	local rate=$1 dir=${2:-down}
	case $dir in
	down) tb_cross_one udp2 udp1 "$rate" ;;
	up) tb_cross_one udp1 udp2 "$rate" ;;
	both) tb_cross_one udp2 udp1 "$rate" && tb_cross_one udp1 udp2 "$rate" ;;
	*) tb_die "tb_cross_start: direction must be down, up or both" ;;
	esac
}

tb_cross_one() {
	local src=$1 dst=$2 rate=$3
	tb_bg "cross-srv-$dst" "$dst" iperf3 -s -p 5301
	tb_wait_port "$dst" 5301 || return
	tb_bg "cross-$src" "$src" iperf3 -u -c "$(tb_addr "$dst")" -p 5301 \
		-b "$rate" -l 1200 -t 86400
}

tb_cross_stop() {
	local n
	for n in udp1 udp2; do
		tb_bg_stop "cross-$n"
		tb_bg_stop "cross-srv-$n"
	done
}

# tb_wait_port NODE PORT: wait (up to 10 s, times TB_SLOW) for a TCP listener.
tb_wait_port() {
	local i
	for i in $(seq "$(tb_slow 100)"); do
		tb_ns "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.1
	done
	tb_die "nothing listens on port $2 in $1"
}

# tb_capture_start [-n] [-s SNAPLEN] NAME NODE DEV FILE [FILTER...]:
# tcpdump, frames cut at SNAPLEN bytes (128: the headers); returns once
# tcpdump is capturing, and so are the captures started before it with -n
# (which returns at once: start a pair with "-n" on the first, and the two
# start up together).
# tb_capture_stop NAME...
TB_CAP_PENDING=
tb_capture_start() {
	local later=0 snap=128 name node dev file n i
	while :; do
		case $1 in
		-n) later=1 && shift ;;
		-s) snap=$2 && shift 2 ;;
		*) break ;;
		esac
	done
	name=$1 node=$2 dev=$3 file=$4
	shift 4
	# an earlier capture's log (same NAME) must not say "listening on"
	: >"$TB_STATE/cap-$name.log"
	# -B: 16 MiB kernel buffer, so a busy TCG guest does not drop packets;
	# --immediate-mode: packets reach tcpdump at once, not in the 1 s
	# blocks of its default timeout, whose last one the SIGINT would lose
	tb_bg "cap-$name" "$node" tcpdump -i "$dev" -s "$snap" -B 16384 -U -n \
		--immediate-mode \
		-w "$file" "$@"
	echo "$file" >"$TB_STATE/cap-$name.file"
	TB_CAP_PENDING+=" $name"
	[ "$later" = 1 ] && return 0
	for n in $TB_CAP_PENDING; do
		for i in $(seq "$(tb_slow 100)"); do
			grep -q "listening on" "$TB_STATE/cap-$n.log" 2>/dev/null &&
				continue 2
			sleep 0.1
		done
		TB_CAP_PENDING=
		tb_die "tcpdump $n did not start: $(cat "$TB_STATE/cap-$n.log")"
		return
	done
	TB_CAP_PENDING=
}

# tb_capture_stop NAME...: stop them (together); prints tcpdump's "N packets
# dropped by kernel" line to stderr when a capture lost packets.
tb_capture_stop() {
	local n f files=() sizes prev=- i pid
	# A busy guest may still hold packets in tcpdump's buffer: let the
	# files stop growing (up to 10 s, times TB_SLOW) before the SIGINT,
	# which discards them.
	for n in "$@"; do
		read -r f 2>/dev/null <"$TB_STATE/cap-$n.file" && files+=("$f")
	done
	for i in $(seq "$(tb_slow 50)"); do
		[ ${#files[@]} -gt 0 ] || break
		sizes=$(stat -c %s "${files[@]}" 2>/dev/null) || true
		[ "$sizes" != "$prev" ] || break
		prev=$sizes
		sleep 0.2
	done
	for n in "$@"; do
		read -r pid 2>/dev/null <"$TB_STATE/cap-$n.pid" &&
			kill -INT "$pid" 2>/dev/null
	done
	for n in "$@"; do
		tb_bg_stop "cap-$n" INT
		grep -h "dropped by kernel" "$TB_STATE/cap-$n.log" 2>/dev/null |
			grep -v "^0 " | sed "s/^/capture $n: /" >&2 || true
	done
}

# tb_red_stats NODE DEV: "marked early pdrop drops" of the RED qdisc on DEV.
tb_red_stats() {
	tc -n "$1" -s -j qdisc show dev "$2" |
		jq -r '.[] | select(.kind == "red") |
			"\(.marked) \(.early) \(.pdrop) \(.drops)"'
}

# --- TB_ROUTER=home: the proxy node as an OpenWrt home router -------------
#
# tb_home_ruleset prints the proxy node's nftables ruleset, modelled on what
# OpenWrt's firewall4 generates for its default configuration
# (openwrt/firewall4, root/usr/share/firewall4/templates/ruleset.uc and
# tests/01_configuration/01_ruleset), with LAN = eth0 (net0) and WAN = eth1:
#   - input and forward policy drop, output accept; "ct state vmap
#     { established : accept, related : accept }" first in each;
#   - drop_invalid on ("invalid : drop"), and fw4's "Prevent NAT leakage"
#     rule; both count into named counters, TCP apart from the rest
#     (tb_home_invalid counts TCP: an MLD report the node sends or gets is
#     "invalid" to conntrack too, and says nothing about the proxy);
#   - lan -> wan forwarding accepted, wan -> lan rejected; ICMPv6 as fw4's
#     Allow-ICMPv6-Input/-Forward rules; the SYN flood limit;
#   - the MSS clamp of a wan zone with mtu_fix (mangle priority, forward);
#   - IPv4 masquerade on the WAN device; IPv6 is routed, not translated;
#   - TB_OFFLOAD_FLOWS=1: fw4's software flow offloading, "flowtable ft"
#     on both devices and "meta l4proto { tcp, udp } flow offload @ft" at
#     the top of the forward chain.
# The ICMPv6 neighbour discovery rules come before the invalid drop:
# conntrack attaches no entry to ND packets, so "invalid" would match them.
tb_home_ruleset() {
	local ft="" offload=""
	if [ "$TB_OFFLOAD_FLOWS" = 1 ]; then
		ft='flowtable ft { hook ingress priority 0; devices = { "eth0", "eth1" }; counter; }'
		offload='meta l4proto { tcp, udp } flow offload @ft'
	fi
	cat <<NFT
table inet fw4
flush table inet fw4
table inet fw4 {
	$ft
	counter invalid_in { }
	counter invalid_fwd { }
	counter nat_leak { }
	counter invalid_other { }
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, nd-router-advert } accept
		ct state invalid meta l4proto tcp counter name invalid_in drop
		ct state invalid counter name invalid_other drop
		ct state vmap { established : accept, related : accept }
		tcp flags & (fin | syn | rst | ack) == syn jump syn_flood
		iifname "eth0" accept
		meta nfproto ipv4 icmp type echo-request accept
		meta nfproto ipv6 icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem, echo-request, echo-reply } limit rate 1000/second accept
		jump handle_reject
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		$offload
		ct state invalid meta l4proto tcp counter name invalid_fwd drop
		ct state invalid counter name invalid_other drop
		ct state vmap { established : accept, related : accept }
		iifname "eth0" jump forward_lan
		iifname "eth1" jump forward_wan
		jump handle_reject
	}
	chain output {
		type filter hook output priority filter; policy accept;
		oif "lo" accept
		ct state vmap { established : accept, related : accept }
	}
	chain handle_reject {
		meta l4proto tcp reject with tcp reset
		reject with icmpx type port-unreachable
	}
	chain syn_flood {
		limit rate 25/second burst 50 packets return
		drop
	}
	chain forward_lan {
		jump accept_to_wan
	}
	chain forward_wan {
		meta nfproto ipv6 icmpv6 type { echo-request, echo-reply, destination-unreachable, packet-too-big } limit rate 1000/second accept
		meta nfproto ipv6 icmpv6 type . icmpv6 code { time-exceeded . 0, parameter-problem . 0, parameter-problem . 1 } limit rate 1000/second accept
		oifname "eth0" jump handle_reject
	}
	chain accept_to_wan {
		meta nfproto ipv4 oifname "eth1" ct state invalid counter name nat_leak drop
		oifname "eth1" accept
	}
	chain mangle_forward {
		type filter hook forward priority mangle; policy accept;
		iifname "eth1" tcp flags syn / syn,fin,rst tcp option maxseg size set rt mtu
		oifname "eth1" tcp flags syn / syn,fin,rst tcp option maxseg size set rt mtu
	}
	chain dstnat {
		type nat hook prerouting priority dstnat; policy accept;
	}
	chain srcnat {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth1" meta nfproto ipv4 masquerade
	}
}
NFT
}

TB_HOME_INVALID_SEEN=0
tb_home_router() {
	tb_home_ruleset | tb_ns proxy nft -f - || return
	TB_HOME_INVALID_SEEN=0
	# conntrack exists once the ruleset uses it; count what it calls invalid
	tb_ns proxy sysctl -qw net.netfilter.nf_conntrack_log_invalid=0 \
		2>/dev/null || true
}

# tb_home_invalid: TCP packets the home router's firewall dropped as
# invalid (ct state invalid, input + forward + NAT leakage), one number.
tb_home_invalid() {
	tb_ns proxy nft -j list counters table inet fw4 |
		jq '[.nftables[] | select(.counter) | .counter |
		     select(.name != "invalid_other") | .packets] | add // 0'
}

# tb_home_ct_invalid: conntrack's own "invalid" statistic in the proxy
# namespace (all CPUs; /proc/net/stat/nf_conntrack, column 5, hex).
tb_home_ct_invalid() {
	local s=0 line f
	while read -r line; do
		read -r -a f <<<"$line"
		[[ ${f[4]} =~ ^[0-9a-f]+$ ]] && s=$((s + 16#${f[4]}))
	done < <(tb_ns proxy cat /proc/net/stat/nf_conntrack)
	echo "$s"
}

# tb_home_ct PORT: the proxy node's conntrack entries of TCP connections to
# PORT, one per line as /proc/net/nf_conntrack shows them (an offloaded one
# carries [OFFLOAD]).
tb_home_ct() {
	tb_ns proxy grep -E "tcp .*dport=$1 " /proc/net/nf_conntrack || true
}

# --- TB_MPTCP=1: a second, disjoint path for Multipath TCP ----------------
#
#                  net3                       net4
#   client eth1 -------- eth0 mbox eth1 -------- eth1 server
#   .3.2                 .3.1      .4.1          .4.2
#
# The client's second address (198.18.3.2, fd8e:c9b0:2a17:3::2) is routed
# by policy (ip rule from it, table 3) through mbox, which forwards to the
# server's usual address (.2.2) over net4; the server routes net3 back over
# eth1.  The two paths share no node but the ends: client - proxy - router
# - server and client - mbox - server.  mbox shapes like the router
# (tb_mptcp_shape: HTB + RED with the same settings): toward the client
# (eth0) as the router's eth1, toward the server (eth1) as its eth2; the
# added delay (TB_DELAY_MS) is on the server's eth1 too.  Multipath TCP:
# net.mptcp.enabled=1 at both ends, "ip mptcp limits set subflow 2
# add_addr_accepted 2" at both, and one "subflow" endpoint per family for
# the client's second address (dev eth1; id 1 IPv4, 2 IPv6): the
# in-kernel path manager opens a second subflow from it to the server's
# address once a connection is MPTCP.  rp_filter is off at both ends (the
# server gets net3's packets for .2.2 on eth1, the client gets the
# server's on eth1).  Rules for the second path go to mbox's
# /proc/net/impair/rules (the first path's to the proxy node's).
declare -A TB_MPTCP_IF_ADDR=(
	[client:eth1]=3.2 [mbox:eth0]=3.1 [mbox:eth1]=4.1 [server:eth1]=4.2
)
TB_HOST[mbox]=3.1

tb_mptcp_up() {
	local n a node dev
	tb_ns_init mbox
	tb_link client eth1 mbox eth0
	tb_link mbox eth1 server eth1
	for n in "${!TB_MPTCP_IF_ADDR[@]}"; do
		a=${TB_MPTCP_IF_ADDR[$n]} node=${n%%:*} dev=${n#*:}
		ip -n "$node" addr add "$(tb_fmt_addr "$a" 4)/24" dev "$dev" &&
			ip -n "$node" -6 addr add "$(tb_fmt_addr "$a" 6)/64" dev "$dev" nodad &&
			ip -n "$node" link set "$dev" up &&
			tb_offloads "$node" "$dev" || return
	done
	tb_ns mbox sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 &&
		ip -n mbox route add "$(tb_addr server)/32" via "$(tb_fmt_addr 4.2 4)" &&
		ip -n mbox -6 route add "$(tb_addr server 6)/128" via "$(tb_fmt_addr 4.2 6)" &&
		ip -n server route add "$TB_V4.3.0/24" via "$(tb_fmt_addr 4.1 4)" &&
		ip -n server -6 route add "$TB_V6:3::/64" via "$(tb_fmt_addr 4.1 6)" &&
		ip -n client rule add from "$(tb_fmt_addr 3.2 4)" table 3 pref 100 &&
		ip -n client route add default via "$(tb_fmt_addr 3.1 4)" dev eth1 table 3 &&
		ip -n client -6 rule add from "$(tb_fmt_addr 3.2 6)" table 3 pref 100 &&
		ip -n client -6 route add default via "$(tb_fmt_addr 3.1 6)" dev eth1 table 3 ||
		return
	for n in client server; do
		tb_ns "$n" sysctl -qw net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.eth0.rp_filter=0 \
			net.ipv4.conf.eth1.rp_filter=0 net.mptcp.enabled=1 &&
			ip -n "$n" mptcp limits set subflow 2 add_addr_accepted 2 || return
	done
	ip -n client mptcp endpoint add "$(tb_fmt_addr 3.2 4)" dev eth1 id 1 subflow &&
		ip -n client mptcp endpoint add "$(tb_fmt_addr 3.2 6)" dev eth1 id 2 subflow ||
		return
	if [ "$TB_DELAY_MS" -gt 0 ]; then
		tc -n server qdisc add dev eth1 root netem \
			delay "${TB_DELAY_MS}ms" limit 100000 || return
	fi
	tb_mptcp_shape "$TB_SETUP"
}

# tb_mptcp_shape download|upload: mbox's HTB + RED for that setup, as the
# router's (toward the client, eth0: TB_RATE_LOW for a download and
# TB_RATE_HIGH for an upload; toward the server, eth1, the other).  Replaces
# what was there, so RED's average starts at 0 (tb_red_reset's job on the
# router).
tb_mptcp_shape() {
	local lo=eth0 hi=eth1 dev rate
	[ "$1" = upload ] && lo=eth1 hi=eth0
	for dev in $lo $hi; do
		rate=$TB_RATE_HIGH
		[ "$dev" = "$lo" ] && rate=$TB_RATE_LOW
		tc -n mbox qdisc del dev "$dev" root 2>/dev/null || true
		tc -n mbox qdisc add dev "$dev" root handle 1: htb default 1 r2q 100 &&
			tc -n mbox class add dev "$dev" parent 1: classid 1:1 htb \
				rate "$rate" ceil "$rate" &&
			tb_red_qdisc add "$dev" "$rate" mbox || return
	done
}

# tb_mptcp_endpoints: the client's MPTCP endpoints and both ends' limits,
# for a record ("ip mptcp endpoint show" and "limits show").
tb_mptcp_endpoints() {
	local n
	for n in client server; do
		echo "$n endpoints: $(ip -n "$n" mptcp endpoint show | tr '\n' ';')"
		echo "$n limits: $(ip -n "$n" mptcp limits show | tr '\n' ';')"
	done
}
