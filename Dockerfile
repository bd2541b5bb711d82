# Builds the binary users download (`cargo xtask dist`: the optimised web app inside it) and
# ships it alone on a slim base. The wasm-opt step builds binaryen from source on the first
# build of this stage (long: no npm here for binaryen's prebuilt package); the layer cache keeps it.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN rustup target add wasm32-unknown-unknown \
 && cargo xtask dist \
 && cp target/dist/trellis /usr/local/bin/trellis

FROM debian:bookworm-slim
# Nothing but the binary: the web app is inside it, and so are the TLS roots (webpki-roots).
COPY --from=build /usr/local/bin/trellis /usr/local/bin/trellis
# SQLite's default file (sqlite://data/trellis.db) goes under the working directory.
WORKDIR /var/lib/trellis
RUN chown nobody:nogroup /var/lib/trellis
VOLUME /var/lib/trellis
ENV TRELLIS_LISTEN=0.0.0.0:8080
EXPOSE 8080
USER nobody
ENTRYPOINT ["trellis"]
CMD ["serve"]
