#!/usr/bin/env bash
# QuantScope set-up on Debian 12: installs what is missing (apt-get; sudo when not root), builds, then
#   ./build.sh run    starts the GUI (with the built-in default format e4m3fn)
#   ./build.sh test   runs every test: the full build, then a Qt-free engine + CLI build
#   ./build.sh sanitize   the Qt-free engine + CLI and their tests under AddressSanitizer + UBSan (CI runs it)
#   ./build.sh package    the Debian package (CPU-only) in build-package/, checked with lintian,
#                         desktop-file-validate and appstreamcli
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-run}
jobs=$(nproc 2>/dev/null || echo 2)

packages=(build-essential cmake ninja-build pkg-config libeigen3-dev libcli11-dev
          libzip-dev nlohmann-json3-dev libgtest-dev libprotobuf-dev protobuf-compiler zlib1g-dev dataset-fashion-mnist
          libdnnl-dev libonnx-testdata
          qt6-base-dev qt6-svg-dev libqcustomplot-dev libgl-dev fonts-dejavu-core help2man)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  echo "build.sh: installing ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

configure_and_build() {  # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_REQUIRE_READERS=ON "$@"
  cmake --build "$dir" -j "$jobs"
}

case "$mode" in
  run)
    install_missing
    configure_and_build build
    exec ./build/quantscope
    ;;
  test)
    install_missing
    configure_and_build build
    # Every test but the real-model downloads (label realmodels: ctest --test-dir build -L realmodels).
    ctest --test-dir build --output-on-failure -j "$jobs" -LE realmodels
    # The engine must never gain a Qt dependency: build and test core + CLI without Qt.
    configure_and_build build-nogui -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=OFF
    ctest --test-dir build-nogui --output-on-failure -j "$jobs" -LE realmodels
    echo "build.sh: all tests passed"
    ;;
  sanitize)
    install_missing
    san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQS_REQUIRE_READERS=ON \
          -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=OFF -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san"
    cmake --build build-asan -j "$jobs"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE realmodels
    echo "build.sh: all tests passed under ASan + UBSan"
    ;;
  package)
    packages+=(lintian desktop-file-utils appstream)  # the checks of the package, not build dependencies
    install_missing
    configure_and_build build-package -DQS_WITH_CUDA=OFF -DCMAKE_INSTALL_PREFIX=/usr
    rm -f build-package/quantscope_*.deb
    (cd build-package && cpack -G DEB)
    deb=$(ls build-package/quantscope_*.deb)
    desktop-file-validate resources/quantscope.desktop
    appstreamcli validate --no-net resources/io.github.quantscope.QuantScope.metainfo.xml
    # lintian exits non-zero on errors; warnings are printed and explained in the README.
    lintian --tag-display-limit 0 "$deb"
    echo "build.sh: package $deb"
    ;;
  *)
    echo "usage: ./build.sh run | ./build.sh test | ./build.sh sanitize | ./build.sh package" >&2
    exit 2
    ;;
esac
