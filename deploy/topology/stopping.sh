# stop_pid PID [SECONDS]: asks a process to stop (TERM) and waits for it; kills it (KILL) if it
# is still there after SECONDS (15). Sourced by down.sh and patroni-down.sh.
stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 $((${2:-15} * 10))); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null || true
}
