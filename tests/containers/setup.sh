#!/usr/bin/env bash
# Prepares this machine for the container tests (marker `container`): the engine and the base
# image they build their task images on. Idempotent: what exists is skipped. Run as root.
#
#   bash tests/containers/setup.sh
#
# 1. apt installs podman, runc and what building the images needs (nothing when present).
# 2. The base image, localhost/ssegrade-base:bookworm-minbase: Debian bookworm minbase made by
#    debootstrap from the machine's own apt mirror (no container registry is needed), with
#    git, util-linux, coreutils, findutils and passwd, and no Python, like SSEBench's Go images.
# 3. localhost/ssegrade-base:bookworm-minbase-python3: the same with python3, for the bundled
#    examples whose toolchain is Python (kvconf's `kvc`).
# 4. localhost/ssegrade-base:bookworm-minbase-python3-gcc: that with gcc, make, libc6-dev and
#    gcc's AddressSanitizer runtime (libasan8, a dependency of gcc), for the bundled C example
#    (rle, built with -fsanitize=address). Steps 3 and 4 are the only builds that use the
#    network (the Debian mirror alone).
# 5. Docker (apt docker.io: dockerd, containerd, runc), for the tests' docker variants. No
#    daemon is started here, nor by the package: the tests start a private dockerd for their
#    session (tests/support/dockerkit.py). Images reach it from podman
#    (`podman save | docker load`).
#
# The engine reads tests/containers/containers.conf (CONTAINERS_CONF), never /etc.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="$here/containers.conf"
base=localhost/ssegrade-base:bookworm-minbase
python_base=localhost/ssegrade-base:bookworm-minbase-python3
c_base=localhost/ssegrade-base:bookworm-minbase-python3-gcc
packages=(podman runc conmon containernetworking-plugins golang-github-containers-common
    iptables uidmap debootstrap patchelf)

say() { echo "containers setup: $*"; }

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
        || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

# The Debian mirror this machine's apt already uses: the first http(s) URI of a bookworm
# source (suite `bookworm`), from deb822 stanzas or one-line lists.
mirror() {
    local files=(/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list)
    local file
    for file in "${files[@]}"; do
        [ -r "$file" ] || continue
        awk '
            function flush() { if (suite && uris != "") print uris; uris = ""; suite = 0 }
            /^[[:space:]]*#/ { next }
            /^URIs:/ { for (i = 2; i <= NF; i++) uris = uris " " $i; next }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1; next }
            /^[[:space:]]*$/ { flush(); next }
            /^deb[[:space:]]/ { for (i = 2; i < NF; i++) if ($i ~ /^https?:/ && $(i + 1) == "bookworm") print $i }
            END { flush() }
        ' "$file"
    done | tr ' ' '\n' | grep -E '^https?://' | grep -v -- '-security' | head -n 1
}

if podman image exists "$base"; then
    say "$base is there"
else
    source_uri="$(mirror)"
    [ -n "$source_uri" ] || { echo "containers setup: no bookworm mirror in /etc/apt" >&2; exit 1; }
    scratch="$(mktemp -d /var/tmp/ssegrade-rootfs.XXXXXX)"
    trap 'rm -rf "$scratch"' EXIT
    say "debootstrap bookworm from $source_uri (about 2 minutes)"
    debootstrap --variant=minbase --include=git,util-linux,coreutils,findutils,passwd \
        bookworm "$scratch/root" "$source_uri" >"$scratch/debootstrap.log" 2>&1 \
        || { tail -n 20 "$scratch/debootstrap.log" >&2; exit 1; }
    rm -rf "$scratch"/root/var/cache/apt/archives/*.deb "$scratch"/root/var/lib/apt/lists/*
    if [ -e "$scratch/root/usr/bin/python3" ]; then
        echo "containers setup: python3 reached the base image" >&2
        exit 1
    fi
    tar -C "$scratch/root" --numeric-owner -c . \
        | podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$base" >/dev/null
    rm -rf "$scratch"
    trap - EXIT
    say "$base imported"
fi

# derive IMAGE FROM PACKAGE...: IMAGE as FROM with Debian's PACKAGEs added, unless there.
# The host's network: the build needs only the Debian mirror, which the base image names.
derive() {
    local image="$1" from="$2"
    shift 2
    if podman image exists "$image"; then
        say "$image is there"
        return
    fi
    say "building $image"
    printf '%s\n' "FROM $from" \
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $* >/dev/null && rm -rf /var/lib/apt/lists/*" \
        | podman build --quiet --network host -t "$image" -f - "$here" >/dev/null
    say "$image built"
}

derive "$python_base" "$base" python3
derive "$c_base" "$python_base" gcc make libc6-dev

# Docker. The package would start its daemon system-wide where an init system lets it: a
# policy-rc.d that refuses every start keeps it from doing so (unless one is there already).
if dpkg-query -W -f='${Status}' docker.io 2>/dev/null | grep -q 'install ok installed'; then
    say "docker.io is there"
else
    say "installing docker.io"
    policy=/usr/sbin/policy-rc.d
    ours=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && ours=1
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends docker.io >/dev/null
    if [ -n "$ours" ]; then
        rm -f "$policy"
        trap - EXIT
    fi
fi
# ssegrade runs the first `docker` of its trusted search path (/usr/local/bin before
# /usr/bin): whichever it is, it must speak to this dockerd (API 1.41 or a client that
# negotiates down to it).
for client in /usr/local/sbin/docker /usr/local/bin/docker /usr/sbin/docker /usr/bin/docker; do
    [ -x "$client" ] || continue
    version="$("$client" version --format '{{.Client.Version}}' 2>/dev/null || true)"
    say "docker client $client ${version:-?}, $(dockerd --version)"
    break
done
