# A base image chosen by ARG is checked as the ARG's default: this one is not
# Debian 12 (IOF004), and the runtime stage's ARG has no default (DL3006).
ARG BASE=ubuntu:22.04
ARG RUNTIME_BASE
FROM ${BASE} AS build
RUN true
FROM $RUNTIME_BASE
HEALTHCHECK NONE
USER 10001
