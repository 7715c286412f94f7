#!/usr/bin/env bash
# Writes a throwaway test PKI into DIR (nothing here is ever committed):
#   ca.pem/ca.key           the test CA
#   server.pem/server.key   signed by it, SAN 127.0.0.1, ::1 and localhost
#   client.pem/client.key   agent client certificate signed by it
#   rogue-ca.pem, rogue.pem/rogue.key  a second CA and a client cert it signed
set -euo pipefail
dir=${1:?usage: gen_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
q() { openssl "$@" >/dev/null 2>&1; }
ca() {  # name subject
  q req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
leaf() {  # name cn ca ext
  q req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf '%s\n' "$4" >"$1.ext"
  q x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" -days 2 \
    -extfile "$1.ext"
  rm -f "$1.csr" "$1.ext"
}
ca ca "iofleet test CA"
ca rogue-ca "rogue CA"
leaf server iofleet-controller ca \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
extendedKeyUsage=serverAuth"
leaf client agent-1 ca "extendedKeyUsage=clientAuth"
leaf rogue agent-rogue rogue-ca "extendedKeyUsage=clientAuth"
chmod 0600 ./*.key
