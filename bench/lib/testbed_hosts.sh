# Sourced by the benches that bring up local test hosts (bench/apply/run.sh, bench/fanout/run.sh),
# so both measure the tools on the same hosts (#28 item 20: the fanout bench kept this machine's
# shell start-up files in every host, and the apply bench did not).
#
# stock_bashrc DIR: put Debian's stock /etc/skel/.bashrc in place of /root/.bashrc in every host
# of the testbed DIR (its hosts.tsv: name, ..., pid of the host's namespace in the 4th column).
# A host's /root is this machine's (the overlay's lower layer), and Debian's bash sources
# ~/.bashrc for every command sshd runs: a development machine's .bashrc (one that runs
# `pyenv init`, say, which runs `pyenv rehash` on every shell start: 0.1-0.2 s of CPU, and up to
# 60 s waiting for a lock) is then paid by every tool on every remote command. The stock one
# returns at once when the shell is not interactive, as on a freshly installed node.
stock_bashrc() {
  local dir=$1 h pid
  while IFS=$'\t' read -r h _ _ pid _; do
    [[ $h == \#* ]] && continue
    nsenter -t "$pid" -m cp /etc/skel/.bashrc /root/.bashrc ||
      { echo "stock_bashrc: cannot put the stock .bashrc into $h" >&2; return 1; }
  done <"$dir/hosts.tsv"
}
