# shellcheck shell=sh
# tls.sh: the development stack's certificates (TESSERA_DEV_TLS=on; the default
# with TESSERA_DEV_NODES > 1), sourced by dev-up.sh after lib.sh. POSIX sh,
# openssl(1). docs/operations.md, "Several hosts: encryption".
#
# <state>/tls/, made once and kept across restarts (remove it for new ones):
#   ca.crt, ca.key           the stack's own CA (EC P-256, 10 years): every
#                            client's trust anchor (TESSERA_TLS_CA_FILE)
#   server.crt, server.key   the control plane's certificate, signed by the CA,
#                            for 127.0.0.1, localhost and the control plane's
#                            address (PostgreSQL, Redis's TLS port, the bus's
#                            TLS terminator)
#   pg/server.crt, .key      a copy for PostgreSQL (its key must belong to the
#                            user that runs it, 0600)
#   node<k>.crt, .key        node k's (TESSERA_DEV_NODES > 1), for its address:
#                            its agent's own https listener (http.tls_cert)
# A server certificate made for other addresses (a stack of nodes after one of
# one node, or another node network) is made again.

# tls_san ADDR...: the subjectAltName for ADDR... (IP: for addresses,
# DNS: for names).
tls_san() {
  _san="DNS:localhost"
  for _a in "$@"; do
    case $_a in
      *[!0-9.]*) _san="$_san,DNS:$_a" ;;
      *) _san="$_san,IP:$_a" ;;
    esac
  done
  echo "$_san"
}

# tls_make_certs DIR ADDR...: the CA (once) and the control plane's
# certificate (server) for ADDR... in DIR; prints nothing on success,
# openssl's complaint otherwise.
tls_make_certs() {
  _td=$1
  shift
  mkdir -p "$_td"
  chmod 0755 "$_td"
  : >"$_td/openssl.log"
  if [ ! -s "$_td/ca.crt" ] || [ ! -s "$_td/ca.key" ]; then
    rm -f "$_td"/*.crt "$_td"/*.key
    (umask 077 && openssl ecparam -name prime256v1 -genkey -noout -out "$_td/ca.key") >>"$_td/openssl.log" 2>&1 &&
      openssl req -x509 -new -key "$_td/ca.key" -sha256 -days 3650 \
        -subj "/CN=Tessera development CA $(hostname)" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$_td/ca.crt" >>"$_td/openssl.log" 2>&1 || { cat "$_td/openssl.log" >&2; return 1; }
  fi
  tls_make_leaf "$_td" server "$@"
}

# tls_make_leaf DIR NAME ADDR...: DIR/NAME.crt and NAME.key, signed by DIR's
# CA, for ADDR...; kept when it exists for the same addresses.
tls_make_leaf() {
  _td=$1 _tn=$2
  shift 2
  _want=$(tls_san "$@")
  if [ -s "$_td/$_tn.crt" ] && [ -s "$_td/$_tn.key" ] && [ "$(cat "$_td/$_tn.san" 2>/dev/null)" = "$_want" ] &&
    openssl verify -CAfile "$_td/ca.crt" "$_td/$_tn.crt" >/dev/null 2>&1; then
    return 0
  fi
  rm -f "$_td/$_tn.crt" "$_td/$_tn.key" "$_td/$_tn.csr"
  (umask 077 && openssl ecparam -name prime256v1 -genkey -noout -out "$_td/$_tn.key") >>"$_td/openssl.log" 2>&1 &&
    openssl req -new -key "$_td/$_tn.key" -subj "/CN=tessera-$_tn" -out "$_td/$_tn.csr" >>"$_td/openssl.log" 2>&1 &&
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyAgreement\nextendedKeyUsage=serverAuth\n' \
      "$_want" >"$_td/$_tn.ext" &&
    openssl x509 -req -in "$_td/$_tn.csr" -CA "$_td/ca.crt" -CAkey "$_td/ca.key" -CAcreateserial \
      -days 825 -sha256 -extfile "$_td/$_tn.ext" -out "$_td/$_tn.crt" >>"$_td/openssl.log" 2>&1 ||
    { cat "$_td/openssl.log" >&2; return 1; }
  echo "$_want" >"$_td/$_tn.san"
  rm -f "$_td/$_tn.csr" "$_td/$_tn.ext"
}

# tls_pg_copy DIR OWNER: DIR/pg/server.{crt,key} for PostgreSQL, owned by
# OWNER (a user name, or empty: the caller), key 0600.
tls_pg_copy() {
  mkdir -p "$1/pg"
  cp "$1/server.crt" "$1/pg/server.crt"
  (umask 077 && cp "$1/server.key" "$1/pg/server.key")
  chmod 0600 "$1/pg/server.key"
  [ -z "$2" ] || chown -R "$2:" "$1/pg"
}

# tls_uri_escape S: S percent-encoded for a URI's query (libpq's sslrootcert).
tls_uri_escape() {
  python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="/"))' "$1"
}
