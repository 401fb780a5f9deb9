# axlrd for docker-compose.yml: built with Go 1.26 (the first build of
# the Temporal server's module takes about 10 minutes), run as a non-root
# user with git (the jobs clone and push) and Go (their checks) on PATH.
# With no machine id, each container is its own host, named by its
# hostname (the container id).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -o /out/ ./cmd/axlrd ./cmd/axlr-tui

FROM golang:1.26-bookworm
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends git ca-certificates tmux \
	&& rm -rf /var/lib/apt/lists/* \
	&& rm -f /etc/machine-id /var/lib/dbus/machine-id \
	&& useradd --create-home --uid 10001 axlr
COPY --from=build /out/axlrd /out/axlr-tui /usr/local/bin/
USER axlr
WORKDIR /home/axlr
ENV AXLR_STATE_DIR=/home/axlr/state GOTOOLCHAIN=local
ENTRYPOINT ["axlrd"]
