# Deliberately broken: a single-stage image without HEALTHCHECK or USER.
FROM debian:12
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["/bin/true"]
