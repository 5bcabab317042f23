# The arcade's game server as an image for deploy/agones/fleet.yaml. Context: the repository root.
#   docker build -f deploy/agones/arcade-server.Dockerfile -t ricochet-arcade-server:0.1.0 .
# (Not built here: this machine has no container engine. `cargo build --release` of the same
# crate, with the same --agones flag, is what deploy/agones/agones.test.mjs runs.)

FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The arcade builds on ricochet-native (wasm/native) by path.
COPY wasm/ wasm/
COPY demos/arcade/server/ demos/arcade/server/
RUN cargo build --release --locked --manifest-path demos/arcade/server/Cargo.toml --bin arcade-server

FROM debian:bookworm-slim
RUN groupadd --system --gid 10001 arcade && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin arcade
COPY --from=build /src/demos/arcade/server/target/release/arcade-server /usr/local/bin/arcade-server
USER 10001:10001
EXPOSE 7777/udp
# SIGTERM stops the arcade cleanly (Agones sends it when it deletes the game server).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/arcade-server"]
