# The crux-sim binary in a small image, for running fuzz campaigns as a
# Kubernetes Indexed Job (deploy/, docs/fuzzing.md):
#
#   docker build -t crux-sim:latest .
#
# The binary is static (the SQLite store is pure Go), so the final stage
# needs only a shell for the Job's command line and CA certificates for
# crux-sim record against a real provider.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download && go mod verify
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/crux-sim ./cmd/crux-sim \
 && /out/crux-sim --version

FROM alpine:3.22
RUN apk add --no-cache ca-certificates
COPY --from=build /out/crux-sim /usr/local/bin/crux-sim
# The same unprivileged user the manifests run as.
USER 65532:65532
WORKDIR /work
ENTRYPOINT ["crux-sim"]
CMD ["--help"]
