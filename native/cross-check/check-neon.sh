#!/bin/sh
# Cross-compiles the CPU kernels for arm64 and runs the NEON affine and float checks under qemu-user (Debian packages:
# gcc-aarch64-linux-gnu, libc6-dev-arm64-cross, qemu-user). Usage: native/cross-check/check-neon.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cpu="$here/../cpu"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
aarch64-linux-gnu-gcc -O3 -std=c11 -fPIC -fvisibility=hidden -shared -o "$out/libforkpoint-kernels.so" "$cpu"/*.c
aarch64-linux-gnu-gcc -O3 -std=c11 -I"$cpu" -o "$out/check" "$here/neon_affine_check.c" "$cpu"/*.c -lm
qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/check"
aarch64-linux-gnu-gcc -O3 -std=c11 -I"$cpu" -o "$out/check-float" "$here/neon_float_check.c" "$cpu"/*.c -lm
qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/check-float"
