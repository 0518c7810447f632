# lethe's command (cmd/lethe) as a container image: the Cosmos DB REST API
# on 8081 and the compute gateway on 8903, as the emulator's image serves
# them, its data (and its certificate) in the volume /data.
#
#	docker build -t lethe .
#	docker run -p 8081:8081 -p 8903:8903 -v lethe-data:/data lethe
#	curl -k https://localhost:8081/_explorer/emulator.pem > lethe.crt
#
# Every flag is also a LETHE_* variable: docker run -e LETHE_LOG_LEVEL=debug.
# The binary is static (no cgo), so the image holds nothing else: a
# distroless base, with CA certificates and a non-root user, and no shell.
# cmd/lethe/docker_test.go builds the same binary, with the same flags, and
# runs it as this image does.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# The modules first, so that a change of the source does not fetch them again.
COPY go.mod go.sum ./
COPY cosmosrest/go.mod cosmosrest/go.sum ./cosmosrest/
COPY cmd/lethe/go.mod cmd/lethe/go.sum ./cmd/lethe/
RUN cd cmd/lethe && go mod download
COPY . .
ARG VERSION=devel
RUN cd cmd/lethe && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/lethe .
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/lethe /usr/local/bin/lethe
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV LETHE_ADDR=0.0.0.0:8081 LETHE_COMPUTE_ADDR=0.0.0.0:8903 LETHE_DIR=/data
EXPOSE 8081 8903
VOLUME /data
ENTRYPOINT ["/usr/local/bin/lethe"]
