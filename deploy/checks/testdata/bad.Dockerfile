# Deliberately broken: every rule of dockerfile-lint.sh must fire on this file
# (deploy/checks/run.sh checks that it does, so the linter cannot silently pass).
FROM ubuntu
MAINTAINER someone@example.com
FROM debian:latest AS build
WORKDIR src
ADD . /src
RUN apt-get update && apt-get install build-essential
RUN apt install -y cmake
RUN cd /src && sudo make | tee build.log
COPY --from=builder /out/a /out/b /usr/local/bin
USER root
CMD iofleet-controller --data-dir=/var/lib/iofleet
