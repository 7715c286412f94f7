# syntax=docker/dockerfile:1
# PostgreSQL 15 from Debian's own postgresql-15 package, on the same Debian 12 base
# as the iofleet images: the store for `iofleet-controller --store=postgresql://...`
# in docker/compose-test.sh (and anywhere a registry's postgres image is not
# reachable). Not hardened for production; use a managed or packaged server there.
#
#   docker/build-images.sh postgres     (or: podman build -f docker/postgres.Dockerfile .)
#   podman run -d -e IOFLEET_DB_PASSWORD_FILE=/run/pw/password -v DIR:/run/pw:ro \
#     -v pgdata:/var/lib/postgresql/data localhost/iofleet-postgres:15
#
# First start (empty data dir): initdb, a login role and database "iofleet" owned
# by it, password from IOFLEET_DB_PASSWORD_FILE, scram-sha-256 over the network.
ARG BASE=debian:12
# hadolint ignore=IOF003
FROM ${BASE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
LABEL org.opencontainers.image.title="iofleet-postgres" \
      org.opencontainers.image.description="PostgreSQL 15 (Debian's postgresql-15) for the iofleet store" \
      org.opencontainers.image.version="15"
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres -m 2775 /run/postgresql
COPY docker/postgres-entrypoint.sh /usr/local/bin/iofleet-postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
WORKDIR /var/lib/postgresql
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["pg_isready", "-h", "/run/postgresql", "-q"]
ENTRYPOINT ["/usr/local/bin/iofleet-postgres-entrypoint"]
