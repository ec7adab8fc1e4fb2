#!/usr/bin/env bash
# The fresh-machine check: does a brand-new Debian 12 machine build QuantScope and pass every test with
# nothing but the README's commands?
#
#   tests/fresh-machine/check.sh            (as root, or with sudo; .ci/run calls it after the host tests)
#   tests/fresh-machine/check.sh --deb build-package/quantscope_0.1.0_amd64.deb
#                                           the package instead: `apt-get install ./<deb>` into the clean root
#                                           (dependencies from the archive), then `quantscope-cli selftest`,
#                                           the man pages, the completion and `quantscope --report` (offscreen)
#                                           from the installed paths
#
# 1. Bootstraps a clean Debian 12 root (debootstrap --variant=minbase bookworm), cached as a tarball under
#    $QS_FRESH_CACHE (default ~/.cache/quantscope-fresh) so later runs skip that download.
# 2. Copies the working tree into it: the files git tracks plus untracked ones it does not ignore (never a
#    build folder, never a bind mount).
# 3. Runs the README's test command inside with chroot, exactly as the README writes it, then the README's
#    run command, which on this display-less root must build and stop at the no-display message.
# 4. Prints the elapsed time and the CTest summaries; exits non-zero if anything failed.
#
# Only proc and dev are mounted into the root, and both are unmounted on every exit path (a trap).
# If the package mirror cannot be reached at all, it prints one loud line saying the check was skipped and
# why, and exits 0: every other failure is a failure. Environment: QS_FRESH_MIRROR (default
# http://deb.debian.org/debian), QS_FRESH_CACHE, QS_FRESH_KEEP=1 keeps the root for a look afterwards.
set -euo pipefail

deb=""
if [ "${1:-}" = --deb ]; then
  [ -f "${2:-}" ] || { echo "fresh-machine: FAILED: --deb needs the path of a .deb file" >&2; exit 1; }
  deb=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
fi
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$here/../.." && pwd)
mirror=${QS_FRESH_MIRROR:-http://deb.debian.org/debian}
cache=${QS_FRESH_CACHE:-${HOME:-/root}/.cache/quantscope-fresh}
suite=bookworm
tarball="$cache/debian-$suite-minbase.tar.gz"
start=$(date +%s)

say() { echo "fresh-machine: $*"; }
die() { echo "fresh-machine: FAILED: $*" >&2; exit 1; }
elapsed() { local s=$(( $(date +%s) - start )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "needs root (debootstrap, chroot, mount) and there is no sudo"
  sudo=(sudo)
fi

# --- the mirror: unreachable at all means skip (loudly); anything after this point that fails is a failure.
mirror_host=$(echo "$mirror" | sed -E 's|^[a-z]+://([^/:]+).*|\1|')
mirror_port=80
case "$mirror" in https://*) mirror_port=443 ;; esac
if ! timeout 20 bash -c "exec 3<>/dev/tcp/$mirror_host/$mirror_port" 2>/dev/null; then
  echo "fresh-machine: *** SKIPPED: the package mirror $mirror ($mirror_host:$mirror_port) cannot be reached, so no fresh Debian 12 root can be built here; the fresh-machine check did NOT run ***"
  exit 0
fi

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

# --- the root, cleaned up on every exit path.
work=$(mktemp -d "${TMPDIR:-/var/tmp}/qs-fresh.XXXXXX")
root="$work/root"
mounted=()
cleanup() {
  local rc=$?
  set +e
  local i
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do
    "${sudo[@]}" umount -R "${mounted[$i]}" 2>/dev/null || "${sudo[@]}" umount -lR "${mounted[$i]}"
  done
  if [ "${QS_FRESH_KEEP:-0}" = 1 ]; then
    say "root kept at $root"
  else
    # Refuse to delete anything while a mount is still inside the root.
    if grep -q " $root/" /proc/self/mounts; then
      echo "fresh-machine: a mount is still inside $root; not deleting it" >&2
    else
      "${sudo[@]}" rm -rf --one-file-system "$work"
    fi
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
  say "bootstrapping a clean Debian 12 root from $mirror (cached afterwards in $tarball)"
  mkdir "$work/boot"
  if ! "${sudo[@]}" debootstrap --variant=minbase "$suite" "$work/boot" "$mirror" > "$work/debootstrap.log" 2>&1; then
    tail -20 "$work/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  "${sudo[@]}" tar -C "$work/boot" -czf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  "${sudo[@]}" rm -rf --one-file-system "$work/boot"
  say "root bootstrapped and cached ($(du -h "$tarball" | cut -f1)) at $(elapsed)"
else
  say "using the cached root $tarball"
fi
mkdir "$root"
"${sudo[@]}" tar -C "$root" -xzf "$tarball"
# The machine's network settings, as a new installation would have them.
"${sudo[@]}" cp -L /etc/resolv.conf "$root/etc/resolv.conf"
echo "deb $mirror $suite main" | "${sudo[@]}" tee "$root/etc/apt/sources.list" >/dev/null
echo "deb $mirror $suite-updates main" | "${sudo[@]}" tee -a "$root/etc/apt/sources.list" >/dev/null

# --- package mode: install the .deb with apt and run the programs from the installed paths.
if [ -n "$deb" ]; then
  "${sudo[@]}" mount -t proc proc "$root/proc"; mounted+=("$root/proc")
  "${sudo[@]}" mount --rbind /dev "$root/dev"; mounted+=("$root/dev")
  "${sudo[@]}" mount --make-rslave "$root/dev"
  "${sudo[@]}" cp "$deb" "$root/tmp/"
  name=$(basename "$deb")
  say "installing $name into the fresh root with apt"
  set +e
  out=$("${sudo[@]}" chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "
      set -e
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends /tmp/$name > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
      echo installed: \$(dpkg-query -W -f='\${Package} \${Version}' quantscope)
      command -v quantscope quantscope-cli
      quantscope-cli --version
      quantscope-cli selftest | tail -1
      test -s /usr/share/man/man1/quantscope-cli.1.gz && test -s /usr/share/man/man1/quantscope.1.gz && echo man pages present
      test -s /usr/share/bash-completion/completions/quantscope-cli && echo completion present
      test -s /usr/share/metainfo/io.github.quantscope.QuantScope.metainfo.xml && echo metainfo present
      test -s /usr/share/applications/quantscope.desktop && echo desktop entry present
      QT_QPA_PLATFORM=offscreen quantscope --report /tmp/report > /tmp/report.log 2>&1 || { tail -5 /tmp/report.log; exit 1; }
      ls /tmp/report | head -20
      test -s /tmp/report/format-grid.png && test -s /tmp/report/error-histogram.pdf && test -s /tmp/report/settings.json && echo report written
    " 2>&1)
  rc=$?
  set -e
  echo "$out" | sed 's/^/  | /'
  [ "$rc" -eq 0 ] || die "the package did not install and run in the fresh root (exit $rc)"
  echo "$out" | grep -q "report written" || die "quantscope --report did not write its files"
  say "PASSED: $name installs with apt on a fresh Debian 12 and its programs run ($(elapsed))"
  exit 0
fi

# --- the working tree, as a clone would have it (no build folders).
dest="$root/home/newcomer/quantscope"
"${sudo[@]}" mkdir -p "$dest"
if git -C "$tree" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$tree" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
     | tar --null -T - -cf -) | "${sudo[@]}" tar -C "$dest" -xf -
else
  (cd "$tree" && tar --exclude='./build' --exclude='./build-*' --exclude='./.deps' -cf - .) | "${sudo[@]}" tar -C "$dest" -xf -
fi
say "copied $(find "$dest" -type f | wc -l) files of the working tree"

# --- the README's two commands, exactly as written there.
readme_cmd() {  # the indented command line of the README's set-up section that runs ./build.sh <mode>
  awk -v mode="$1" '/^## Set up/{s=1; next} /^## /{s=0} s && /^    / && $0 ~ ("build\\.sh " mode "$") {sub(/^ +/, ""); print; exit}' "$tree/README.md"
}
test_cmd=$(readme_cmd test)
run_cmd=$(readme_cmd run)
[ -n "$test_cmd" ] || die "README.md's set-up section has no './build.sh test' command"
[ -n "$run_cmd" ] || die "README.md's set-up section has no './build.sh run' command"

"${sudo[@]}" mount -t proc proc "$root/proc"; mounted+=("$root/proc")
"${sudo[@]}" mount --rbind /dev "$root/dev"; mounted+=("$root/dev")
"${sudo[@]}" mount --make-rslave "$root/dev"

in_root() {  # a login shell of a new machine's root user: nothing of this machine's environment
  "${sudo[@]}" chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /home/newcomer/quantscope && $1"
}

log="$work/test.log"
say "running the README's test command in the fresh root: $test_cmd"
set +e
in_root "$test_cmd" 2>&1 | tee "$log" | sed -u 's/^/  | /'
test_rc=${PIPESTATUS[0]}
set -e
summaries=$(grep -E "tests passed|tests failed|The following tests FAILED|^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess|Not Run)" "$log" || true)

say "running the README's run command (no display here: it must build and stop at the no-display message): $run_cmd"
set +e
run_out=$(in_root "timeout 1200 $run_cmd" 2>&1)
run_rc=$?
set -e
echo "$run_out" | tail -5 | sed 's/^/  | /'

echo "fresh-machine: ---- summary (elapsed $(elapsed)) ----"
echo "$summaries" | sed 's/^/fresh-machine: /'
fail=0
if [ "$test_rc" -ne 0 ]; then echo "fresh-machine: FAILED: '$test_cmd' exited $test_rc"; fail=1; fi
if ! grep -q "build.sh: all tests passed" "$log"; then echo "fresh-machine: FAILED: no 'all tests passed' line"; fail=1; fi
if ! echo "$run_out" | grep -q "no display found"; then
  echo "fresh-machine: FAILED: '$run_cmd' (exit $run_rc) did not reach the no-display message"; fail=1
fi
if [ "$fail" -ne 0 ]; then exit 1; fi
say "PASSED: a fresh Debian 12 root builds QuantScope and passes every test with the README's commands ($(elapsed))"
