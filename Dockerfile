# certorder in a container: a static binary on distroless, run as non-root,
# the store in the volume /var/lib/certorder.
#
#   docker build -t certorder --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) --build-arg DATE=$(date -u +%FT%TZ) .
#   docker run -d --name certorder -p 8080:8080 -v certorder-data:/var/lib/certorder certorder
#   docker exec certorder certorder admin member add acme-corp
#
# Not built on the machine this was written on (it has no Docker engine).

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# The modules first, so that a change to the code alone reuses their layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ARG DATE=unknown
# CGO off: the SQLite driver is pure Go, so the binary needs no libc.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/certorder/certorder/internal/buildinfo.Version=${VERSION} \
        -X github.com/certorder/certorder/internal/buildinfo.Commit=${COMMIT} \
        -X github.com/certorder/certorder/internal/buildinfo.Date=${DATE}" \
      -o /out/certorder ./cmd/certorder \
 && mkdir -p /out/state

# distroless/static: CA certificates and time zones, no shell, no package
# manager; the nonroot user is 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/certorder /usr/bin/certorder
# A volume mounted here for the first time takes this directory's owner.
COPY --from=build --chown=65532:65532 /out/state /var/lib/certorder
USER 65532:65532
WORKDIR /var/lib/certorder
ENV CERTORDER_DB=/var/lib/certorder/certorder.db
VOLUME ["/var/lib/certorder"]
EXPOSE 8080
ENTRYPOINT ["/usr/bin/certorder"]
CMD ["serve", "--addr", ":8080"]
