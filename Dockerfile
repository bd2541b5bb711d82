# Multi-stage build of the Trellis server with its web app.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN rustup target add wasm32-unknown-unknown \
 && cargo xtask spa \
 && cargo build --release -p trellis

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/trellis /usr/local/bin/trellis
COPY --from=build /src/dist /srv/trellis/dist
WORKDIR /srv/trellis
ENV TRELLIS_LISTEN=0.0.0.0:8080 TRELLIS_WEB_DIR=/srv/trellis/dist
EXPOSE 8080
USER nobody
ENTRYPOINT ["trellis"]
CMD ["serve"]
