# One image for every role of deploy/: `volplane controller` (central loops,
# node-local provisioner, CSI sidecar) and `volplane driver`.
#
#   docker build -t ghcr.io/volplane/volplane:v0.1.0 .
#
# The first build compiles kube-apiserver and friends (linked for `up`):
# about 9 minutes on 2 cores; the module and build caches below keep later
# builds short.

# Base images by exact tag (a Go release, a dated Debian snapshot), never
# a tag that moves: a rebuild of the same commit gets the same bases.
# Digests are better still where your builder can resolve them.
FROM golang:1.26.8-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Static: no libc needed in the final image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/volplane ./cmd/volplane

# Not distroless: the bundled driver mounts through k8s.io/mount-utils,
# which runs mount and umount, and block volumes need losetup; Debian's
# slim image has all three (package mount). The controller roles use none
# of them.
FROM debian:trixie-20261109-slim
# The one list of the tools the driver runs; the build fails if the base
# lacks one. deploy/image_test.go checks it is what the code executes, and
# tools/realnode/runtime/mkimage reads this stage (this list, USER,
# ENTRYPOINT, the COPY) to assemble the same image without a registry.
RUN for tool in mount umount losetup; do command -v "$tool" || exit 1; done
COPY --from=build /out/volplane /usr/local/bin/volplane
# Non-root by default. The driver's DaemonSet runs it as root (it mounts
# volumes); that is set there, in its securityContext, not here.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/volplane"]
