#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The netns churn (issue 11): TB_CHURN_NETNS router namespaces (make test:
# 30; make debugtest: 500) created and destroyed with tcpfwd, ecn_proxy
# and impair loaded, each with the proxy enabled, impairment rules and
# live connections in both modules' flow tables when it is deleted (the
# pernet exit of both modules with flows, rules and packets in flight).
# TB_CHURN_JOBS (2) loops run side by side, each with its own pair of
# endpoints (churn-aJ, churn-bJ), so that two namespaces are set up and
# torn down at once; loop J takes iterations J, J + JOBS, ...
#
#   churn-aJ (N, tcp_ecn=0)       churn-r-I (new each iteration)      churn-bJ (E, tcp_ecn=1)
#   eth0 ------------------------ a0   ROUTER    b0 ------------------------ eth0
#   198.18.50.2              198.18.50.1    198.18.51.1                198.18.51.2
#   fd8e:c9b0:2a17:50::2     ...:50::1      ...:51::1          fd8e:c9b0:2a17:51::2
#   bash /dev/tcp clients    net.ecn_proxy.enabled=1           python3 server
#                            impair rules:                     (ports 5001, 5002)
#                              flags syn strip sackok
#                              dport 5002 seqrand sack-fix
#                              dir initiator ecn-bleach
#
# The endpoints stay; their eth0 is the peer of a veth of the router
# namespace, so it comes and goes with each one.  Per iteration (the
# addresses are the same in every loop: each has its own endpoints):
#   1. the router namespace is created and wired, the proxy enabled, the
#      rules written;
#   2. three downloads N <- E of 100 kB (IPv4 and IPv6 on port 5001,
#      proxied; IPv4 on 5002, under seqrand) are byte-exact (cmp);
#   3. a fourth connection (IPv4, 5001) stays open, E sending 1 kB every
#      50 ms to N;
#   4. the router's tables hold flows: ecn_proxy has proxied >= 3 flows
#      (flows_proxied_ecn_responder) and still holds an open one in phase
#      2 (expires beyond timeout_closed); impair holds flows, one of them
#      with seqrand state, and its rules have hits;
#   5. the router namespace is deleted while that connection trickles.
# At the end: no namespace of ours is left, ecn_proxy and impair are still
# loaded with a module reference count of 0, `rmmod impair ecn_proxy
# tcpfwd` succeeds, and the kernel log shows no BUG, WARNING, Oops, KASAN
# or UBSAN report since the start.  Leaks: guest-init.sh's kmemleak scans
# at the end of the guest (the debug kernel) see what the churn left.
# tb-make-test: second-kernel
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/impair_lib.sh"
tb_knob_int N TB_CHURN_NETNS 30 1
tb_knob_int JOBS TB_CHURN_JOBS 2 1 8
require_cmd python3 timeout cmp
[ "$JOBS" -le "$N" ] || JOBS=$N

SIZE=100000
JOB_PIDS=()

# hold_stop J: kill loop J's open connection (its bash on N's side, not
# our child: killed by pid)
hold_stop() {
	local f=$TB_STATE/hold$1.pid
	[ ! -s "$f" ] || kill -KILL "$(<"$f")" 2>/dev/null || true
	: >"$f"
}

churn_cleanup() {
	local rc=$? n j
	for n in "${JOB_PIDS[@]}"; do
		kill -KILL "$n" 2>/dev/null || true
	done
	for ((j = 1; j <= JOBS; j++)); do
		hold_stop $j
		tb_bg_stop srv$j
	done
	for n in $(ip netns list | awk '$1 ~ /^churn-/ { print $1 }'); do
		ip netns del "$n" 2>/dev/null || true
	done
	return $rc
}
trap churn_cleanup EXIT
mkdir -p "$TB_STATE"
churn_cleanup

tb_proxy_load
impair_load
mark=$(dmesg | wc -l)

DATA=$TB_STATE/churn.data
head -c $SIZE /dev/urandom >"$DATA"

# E's server: "N" -> N bytes of DATA, then close; "N trickle" -> N bytes,
# then 1 kB every 50 ms until the client goes.  IPv4 and IPv6 (dual stack).
SRV_PY='
import select, socket, sys, threading, time
data = open(sys.argv[1], "rb").read()
def serve(c):
    try:
        c.settimeout(5 * int(sys.argv[2]))
        req = c.makefile("rb").readline().split()
        c.sendall(data[:int(req[0])])
        if len(req) > 1:
            while True:
                r, _, _ = select.select([c], [], [], 0.05)
                if r and not c.recv(4096):
                    break
                c.sendall(data[:1000])
        else:
            c.shutdown(socket.SHUT_WR)
            while c.recv(4096):
                pass
    except (OSError, ValueError, IndexError):
        pass
    finally:
        c.close()
def listen(port):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind(("::", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()
for p in (5001, 5002):
    threading.Thread(target=listen, args=(p,), daemon=True).start()
while True:
    time.sleep(3600)
'

# The exec of a process costs about 0.1 s in a TCG guest (tb_up: 20 s), so
# each namespace takes a few: one shell each for the router's settings and
# for N's side of the traffic, one ip batch per namespace.
#
# The router: forwarding, no DAD, the proxy on, the rules (one write(2))
# shellcheck disable=SC2016
R_SH='
echo 1 >/proc/sys/net/ipv4/ip_forward &&
echo 1 >/proc/sys/net/ipv6/conf/all/forwarding &&
echo 0 >/proc/sys/net/ipv6/conf/all/accept_dad &&
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad &&
echo 1 >/proc/sys/net/ecn_proxy/enabled &&
printf "%s\n" flush "flags syn strip sackok" "dport 5002 seqrand sack-fix" \
	"dir initiator ecn-bleach" >/proc/net/impair/rules
'

# N's side: the connection that stays open (its pid on the first line;
# "held" in the file $1 once it has its first 1000 bytes), then the three
# downloads, "ok" or what failed on one line each
# shellcheck disable=SC2016
GET_SH='
(exec 3<>/dev/tcp/198.18.51.2/5001 && printf "1000 trickle\n" >&3 &&
	head -c 1000 <&3 >/dev/null && echo held && exec cat <&3 >/dev/null
) >"$1" 2>&1 &
echo "hold $!"
get() {
	exec 3<>"/dev/tcp/$1/$2" || { echo "connect $1 $2 failed"; return; }
	printf "%s\n" "$3" >&3
	if head -c "$3" <&3 | cmp -s - '$DATA'; then
		echo ok
	else
		echo "$1 $2 not byte-exact"
	fi
	exec 3<&-
}
get 198.18.51.2 5001 '$SIZE'
get fd8e:c9b0:2a17:51::2 5001 '$SIZE'
get 198.18.51.2 5002 '$SIZE'
'

for ((j = 1; j <= JOBS; j++)); do
	tb_ns_init churn-a$j
	tb_ns_init churn-b$j
	tb_ns churn-a$j sysctl -qw net.ipv4.tcp_ecn=0
	tb_ns churn-b$j sysctl -qw net.ipv4.tcp_ecn=1
	tb_bg srv$j churn-b$j python3 -c "$SRV_PY" "$DATA" "$TB_SLOW"
done
for ((j = 1; j <= JOBS; j++)); do
	tb_wait_port churn-b$j 5001
	tb_wait_port churn-b$j 5002
done

# router_up R J: the router namespace R, wired to loop J's endpoints, the
# proxy on and the rules written.  The endpoints' eth0 of the loop's
# previous router goes when that namespace's cleanup has run (in a
# workqueue, after `ip netns del` has returned): while the name is taken
# the veths are made again every 0.1 s, for 5 s at most (the caller's
# w_cleanup counts the iterations that had to wait).
router_up() {
	local r=$1 A=churn-a$2 B=churn-b$2 s net k err
	ip netns add "$r" || return
	ip netns exec "$r" sh -c "$R_SH" || return
	for ((k = 0; ; k++)); do
		err=$(ip -b - 2>&1 <<-EOF
			link add a0 netns $r address 02:ec:9e:50:00:01 type veth peer name eth0 netns $A address 02:ec:9e:50:00:02
			link add b0 netns $r address 02:ec:9e:51:00:01 type veth peer name eth0 netns $B address 02:ec:9e:51:00:02
		EOF
		) && break
		ip -n "$r" link del a0 2>/dev/null || true
		if [[ $err != *"File exists"* ]] || [ "$k" -ge $((50 * TB_SLOW)) ]; then
			echo "$err" >&2
			return 1
		fi
		[ "$k" != 0 ] || w_cleanup=$((w_cleanup + 1))
		sleep 0.1
	done
	ip -n "$r" -b - <<-EOF || return
		addr add $TB_V4.50.1/24 dev a0
		addr add $TB_V6:50::1/64 dev a0 nodad
		addr add $TB_V4.51.1/24 dev b0
		addr add $TB_V6:51::1/64 dev b0 nodad
		link set lo up
		link set a0 up
		link set b0 up
	EOF
	for s in a b; do
		net=$([ $s = a ] && echo 50 || echo 51)
		ip -n churn-$s$2 -b - <<-EOF || return
			addr add $TB_V4.$net.2/24 dev eth0
			addr add $TB_V6:$net::2/64 dev eth0 nodad
			link set eth0 up
			route add default via $TB_V4.$net.1
			route add default via $TB_V6:$net::1
		EOF
	done
}

# tables R: "proxied flows_active live_phase2 impair_flows seqrand hits";
# live_phase2: proxied flows in phase 2 that expire later than a closed
# one (timeout_closed), i.e. open connections
tables() {
	# shellcheck disable=SC2016
	ip netns exec "$1" awk '
		FILENAME ~ /timeout_closed/ { t = $1 }
		FILENAME ~ /ecn_proxy\/stats/ && $1 == "flows_proxied_ecn_responder" { p = $2 }
		FILENAME ~ /ecn_proxy\/stats/ && $1 == "flows_active" { pa = $2 }
		FILENAME ~ /ecn_proxy\/flows/ && / e=B phase=2 / {
			for (i = 1; i <= NF; i++)
				if ($i ~ /^expires=/ && substr($i, 9) + 0 > t)
					live++
		}
		FILENAME ~ /impair\/stats/ && $1 == "flows_active" { ia = $2 }
		FILENAME ~ /impair\/stats/ && $1 == "flows_seqrand" { sr = $2 }
		FILENAME ~ /impair\/rules/ && / # hits / { hits += $NF }
		END { print p + 0, pa + 0, live + 0, ia + 0, sr + 0, hits + 0 }' \
		/proc/sys/net/ecn_proxy/timeout_closed \
		/proc/net/ecn_proxy/stats /proc/net/ecn_proxy/flows \
		/proc/net/impair/stats /proc/net/impair/rules
}

# first FAILS MSG: log MSG for the first three failures of a kind
first() {
	[ "$1" -gt 3 ] || log_info "$2"
}

# Where an iteration's time goes (the debug kernel takes ten times the
# stock one's 2-4 s): phase NAME adds the microseconds since the last
# call to NAME's total in T_PH (the calling loop's)
PHASES="setup downloads hold tables delete"
phase() {
	local now=${EPOCHREALTIME//[!0-9]/}
	T_PH[$1]=$((${T_PH[$1]:-0} + now - t_last))
	t_last=$now
}
# phases US...: "setup S s, downloads S s, ..." from PHASES' microseconds
phases() {
	local p out=
	for p in $PHASES; do
		out+="${out:+, }$p $((${1:-0} / 1000000)) s"
		shift || true
	done
	echo "$out"
}
# the microseconds of PHASES in T_PH, in that order
phase_us() {
	local p out=()
	for p in $PHASES; do
		out+=("${T_PH[$p]:-0}")
	done
	echo "${out[*]}"
}

# churn_job J: loop J, iterations J, J + JOBS, ... up to N through the
# endpoints churn-aJ and churn-bJ; at the end "ITERATIONS FAILURES...
# WAITS PHASE_US..." in $TB_STATE/jobJ.res (the failure counts in the
# order setup, downloads, open connection, ecn_proxy, impair, delete;
# WAITS: router_up's w_cleanup)
churn_job() {
	local j=$1 a=churn-a$1 i r k got res line p pa live ia sr hits ran=0
	local hold_log=$TB_STATE/hold$1.log every
	local f_setup=0 f_xfer=0 f_hold=0 f_proxy=0 f_impair=0 f_del=0 w_cleanup=0
	local -A T_PH=()
	local t_last=${EPOCHREALTIME//[!0-9]/}
	# a progress line about every fifth of the loop, every 10 at least
	every=$(((N / JOBS / 5 + 9) / 10 * 10))
	[ "$every" -ge 10 ] || every=10
	for ((i = j; i <= N; i += JOBS)); do
		r=churn-r-$i
		ran=$((ran + 1))
		phase other
		if ! router_up "$r" "$j"; then
			f_setup=$((f_setup + 1))
			first $f_setup "iteration $i: cannot set up $r"
			ip netns del "$r" 2>/dev/null || true
			continue
		fi
		phase setup
		: >"$hold_log"
		got=$(timeout "$(tb_slow 30)" ip netns exec "$a" bash -c "$GET_SH" _ "$hold_log" 2>&1) || true
		res=
		while read -r line; do
			case $line in
			"hold "*) echo "${line#hold }" >"$TB_STATE/hold$j.pid" ;;
			*) res+="$line;" ;;
			esac
		done <<<"$got"
		if [ "$res" != "ok;ok;ok;" ]; then
			f_xfer=$((f_xfer + 1))
			first $f_xfer "iteration $i: downloads: $(echo "$got" | tr '\n' ' ')"
		fi
		phase downloads
		for ((k = 0; k < 50 * TB_SLOW; k++)); do
			[[ $(<"$hold_log") != *held* ]] || break
			sleep 0.1
		done
		if [[ $(<"$hold_log") != *held* ]]; then
			f_hold=$((f_hold + 1))
			first $f_hold "iteration $i: the open connection did not start: $(<"$hold_log")"
		fi
		phase hold
		read -r p pa live ia sr hits < <(tables "$r") || true
		phase tables
		if [ "${p:-0}" -lt 3 ] || [ "${live:-0}" -lt 1 ]; then
			f_proxy=$((f_proxy + 1))
			first $f_proxy "iteration $i: ecn_proxy: $p flows proxied, $pa active, $live open in phase 2"
		fi
		if [ "${ia:-0}" -lt 1 ] || [ "${sr:-0}" -lt 1 ] || [ "${hits:-0}" -lt 1 ]; then
			f_impair=$((f_impair + 1))
			first $f_impair "iteration $i: impair: $ia flows active, $sr with seqrand, $hits rule hits"
		fi
		if ! ip netns del "$r"; then
			f_del=$((f_del + 1))
			first $f_del "iteration $i: cannot delete $r"
		fi
		hold_stop "$j"
		phase delete
		[ $((ran % every)) != 0 ] ||
			log_info "loop $j: $ran namespaces in $((SECONDS - t0)) s (last: ecn_proxy $pa flows, impair $ia; $(phases $(phase_us)))"
	done
	echo "$ran $f_setup $f_xfer $f_hold $f_proxy $f_impair $f_del $w_cleanup $(phase_us)" >"$TB_STATE/job$j.res"
}

t0=$SECONDS
for ((j = 1; j <= JOBS; j++)); do
	rm -f "$TB_STATE/job$j.res"
	churn_job $j &
	JOB_PIDS+=($!)
done
lost=0
for j in "${!JOB_PIDS[@]}"; do
	rc=0
	wait "${JOB_PIDS[$j]}" || rc=$?
	[ $rc = 0 ] || log_info "loop $((j + 1)) exited with $rc"
done
JOB_PIDS=()

# the loops' sums: iterations, failures, waits and phases (loop-seconds:
# the loops overlap, so they add up to about JOBS times the wall time)
sum=(0 0 0 0 0 0 0 0)
for p in $PHASES; do
	sum+=(0)
done
for ((j = 1; j <= JOBS; j++)); do
	if [ ! -s "$TB_STATE/job$j.res" ]; then
		lost=$((lost + 1))
		continue
	fi
	read -r -a res <"$TB_STATE/job$j.res"
	for k in "${!sum[@]}"; do
		sum[k]=$((sum[k] + ${res[k]:-0}))
	done
done
read -r ran f_setup f_xfer f_hold f_proxy f_impair f_del w_cleanup <<<"${sum[*]:0:8}"
log_info "$ran iterations in $((SECONDS - t0)) s in $JOBS loops (loop-seconds: $(phases ${sum[*]:8}))"
log_info "$w_cleanup of $ran iterations waited for the cleanup of the loop's previous namespace"

RET=0
[ "$lost" = 0 ] || check_err 1 "$lost of $JOBS loops did not finish"
[ "$ran" = "$N" ] || check_err 1 "$ran of $N iterations were run"
log_test "the $JOBS loops ran all $N iterations"

RET=0
[ $f_setup = 0 ] || check_err 1 "$f_setup of $N router namespaces could not be set up"
[ $f_del = 0 ] || check_err 1 "$f_del of $N router namespaces could not be deleted"
log_test "$N router namespaces created and deleted with both modules loaded"

RET=0
[ $f_xfer = 0 ] || check_err 1 "downloads failed or not byte-exact in $f_xfer of $N iterations"
[ $f_hold = 0 ] || check_err 1 "the open connection did not start in $f_hold of $N iterations"
log_test "traffic through each router namespace is byte-exact (IPv4, IPv6, seqrand)"

RET=0
[ $f_proxy = 0 ] || check_err 1 "ecn_proxy's table lacked proxied or open flows in $f_proxy of $N iterations"
[ $f_impair = 0 ] || check_err 1 "impair's table or rules lacked flows or hits in $f_impair of $N iterations"
log_test "each namespace is deleted with flows in both modules' tables"

RET=0
for ((j = 1; j <= JOBS; j++)); do
	tb_bg_stop srv$j
	for n in churn-a$j churn-b$j; do
		ip netns del "$n" || check_err 1 "cannot delete $n"
	done
done
left=$(ip netns list | awk '$1 ~ /^churn-/ { print $1 }' | tr '\n' ' ')
[ -z "$left" ] || check_err 1 "namespaces left: $left"
log_test "no namespace of the churn is left"

RET=0
for m in tcpfwd ecn_proxy impair; do
	[ -d /sys/module/$m ] || check_err 1 "$m is no longer loaded"
done
for m in ecn_proxy impair; do
	rc=$(cat /sys/module/$m/refcnt 2>/dev/null) || rc=none
	[ "$rc" = 0 ] || check_err 1 "$m's reference count is $rc, expected 0"
done
rmmod impair ecn_proxy tcpfwd || check_err 1 "rmmod impair ecn_proxy tcpfwd failed"
for m in tcpfwd ecn_proxy impair; do
	[ ! -d /sys/module/$m ] || check_err 1 "$m still loaded after rmmod"
done
log_test "after the churn the modules are unreferenced and unload"

RET=0
if dmesg | tail -n +"$mark" |
	grep -E "BUG:|WARNING:|Oops|KASAN|UBSAN|refcount_t|list_del|general protection"; then
	check_err 1 "the kernel log shows a problem during the churn"
fi
log_test "no kernel report during the churn"

exit $EXIT_STATUS
