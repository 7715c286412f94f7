#!/usr/bin/env bash
# dockerfile-lint.sh: a small Dockerfile linter for the rules of hadolint that
# matter for iofleet's images, in bash + awk (hadolint is not packaged in
# Debian 12, and nothing may be downloaded). It is NOT hadolint: it parses
# instructions line by line (continuations and comments handled), not the full
# Dockerfile/shell grammar, and it checks only the rules below.
#
#   usage: dockerfile-lint.sh [--require-user] [--list-rules] DOCKERFILE...
#     --require-user  the final stage must switch to a non-root USER (IOF001)
#     exit status: 0 clean, 1 findings, 2 usage error
#
# A finding can be silenced like hadolint: `# hadolint ignore=DL3008,DL3002`
# on the line(s) directly above the instruction.
#
# Rules (hadolint ids where hadolint has one):
#   DL3000 WORKDIR must be absolute
#   DL3002 the final USER must not be root (only if USER appears)
#   DL3003 use WORKDIR instead of `cd` in RUN
#   DL3004 no sudo in RUN
#   DL3006 FROM must name an explicit tag or digest
#   DL3007 FROM must not use the `latest` tag
#   DL3009 RUN with apt-get update/install must delete /var/lib/apt/lists
#   DL3014 apt-get install needs -y
#   DL3015 apt-get install needs --no-install-recommends
#   DL3020 use COPY, not ADD
#   DL3021 COPY with several sources needs a destination ending in /
#   DL3022 COPY --from must name an earlier stage (or an image with a tag)
#   DL3025 CMD/ENTRYPOINT must use the JSON (exec) form
#   DL3027 use apt-get, not apt
#   DL4000 MAINTAINER is deprecated
#   DL4006 set SHELL ["/bin/bash","-o","pipefail","-c"] before a RUN with a pipe
#   IOF001 the final stage must set a non-root USER (with --require-user)
#   IOF002 the final stage must declare a HEALTHCHECK (NONE counts)
#   IOF003 multi-stage: at least two FROM (a build stage and a runtime stage)
#   IOF004 base images must be Debian 12 (debian:12 or debian:12-slim, or a digest)
set -euo pipefail

require_user=0
files=()
for a in "$@"; do
  case "$a" in
    --require-user) require_user=1 ;;
    --list-rules) sed -n '/^# Rules/,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "dockerfile-lint: unknown option $a" >&2; exit 2 ;;
    *) files+=("$a") ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "usage: $0 [--require-user] DOCKERFILE..." >&2; exit 2; }

status=0
for f in "${files[@]}"; do
  if [ ! -r "$f" ]; then
    echo "$f: cannot read" >&2
    status=1
    continue
  fi
  if ! awk -v FILE="$f" -v REQUIRE_USER="$require_user" '
    function report(line, rule, msg) {
      if (index("," ignore[line] ",", "," rule ",") > 0) return
      printf "%s:%d: %s %s\n", FILE, line, rule, msg
      bad = 1
    }
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    # Processes one logical instruction `ins` that started on line `ln`.
    function instruction(ln, ins,    op, args, n, w, i, v, img, tag, stage, parts, src, nsrc, dest) {
      ins = trim(ins)
      if (ins == "") return
      op = toupper(ins); sub(/[ \t].*/, "", op)
      args = ins; sub(/^[^ \t]+[ \t]*/, "", args)
      if (op == "FROM") {
        nfrom++
        n = split(args, w, /[ \t]+/)
        i = 1
        while (i <= n && w[i] ~ /^--/) i++          # --platform=...
        img = w[i]
        stage = ""
        if (i + 2 <= n && toupper(w[i + 1]) == "AS") stage = w[i + 2]
        final_stage = stage
        final_user = ""; final_health = 0; final_from_line = ln
        # FROM ${BASE} / $BASE: checked as the ARG default declared before the
        # first FROM (what a build without --build-arg uses); none = untagged.
        while (match(img, /\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/)) {
          v = substr(img, RSTART, RLENGTH); gsub(/[${}]/, "", v)
          if (!(v in argdef)) {
            report(ln, "DL3006", "always tag the image version explicitly: \"" w[i] "\" (ARG " v " has no default before the first FROM)")
            if (stage != "") stages[stage] = 1
            return
          }
          img = substr(img, 1, RSTART - 1) argdef[v] substr(img, RSTART + RLENGTH)
        }
        if (img == "scratch" || (img in stages)) { final_base = img; if (stage != "") stages[stage] = 1; return }
        final_base = img
        if (img ~ /@sha256:[0-9a-f]+$/) { if (stage != "") stages[stage] = 1; return }
        tag = img
        if (tag ~ /:[^\/]*$/) { sub(/^.*:/, "", tag) } else { tag = "" }
        if (tag == "") report(ln, "DL3006", "always tag the image version explicitly: \"" img "\"")
        else if (tag == "latest") report(ln, "DL3007", "using latest is prone to errors: \"" img "\"")
        if (img !~ /^(docker\.io\/(library\/)?)?debian:12(-slim)?$/)
          report(ln, "IOF004", "base image must be Debian 12 (debian:12 or debian:12-slim): \"" img "\"")
        if (stage != "") stages[stage] = 1
        return
      }
      if (nfrom == 0 && op == "ARG") {
        n = split(args, w, /[ \t]+/)
        for (i = 1; i <= n; i++) if (w[i] ~ /=/) { v = w[i]; sub(/=.*/, "", v); argdef[v] = substr(w[i], index(w[i], "=") + 1) }
        return
      }
      if (nfrom == 0 && op != "ARG") { report(ln, "DL3061", "instruction before the first FROM: " op); return }
      if (op == "MAINTAINER") report(ln, "DL4000", "MAINTAINER is deprecated (use LABEL)")
      else if (op == "ADD") report(ln, "DL3020", "use COPY instead of ADD for files and folders")
      else if (op == "WORKDIR") {
        if (args !~ /^("?\/|"?\$)/) report(ln, "DL3000", "use absolute WORKDIR: \"" args "\"")
      } else if (op == "USER") {
        final_user = args
        user_line = ln
      } else if (op == "HEALTHCHECK") {
        final_health = 1
      } else if (op == "SHELL") {
        pipefail = (args ~ /pipefail/)
      } else if (op == "CMD" || op == "ENTRYPOINT") {
        if (args !~ /^\[.*\]$/) report(ln, "DL3025", "use arguments JSON notation for " op)
      } else if (op == "COPY") {
        n = split(args, w, /[ \t]+/)
        nsrc = 0
        for (i = 1; i <= n; i++) {
          if (w[i] ~ /^--from=/) {
            src = w[i]; sub(/^--from=/, "", src)
            if (!(src in stages) && src !~ /:[^\/]+$/ && src !~ /@sha256:/)
              report(ln, "DL3022", "COPY --from should reference a previously defined FROM alias: \"" src "\"")
          } else if (w[i] !~ /^--/) {
            parts[++nsrc] = w[i]
          }
        }
        dest = parts[nsrc]
        if (nsrc > 2 && dest !~ /\/$/) report(ln, "DL3021", "COPY with more than 2 arguments requires the last argument to end with /")
      } else if (op == "RUN") {
        if (args ~ /(^|[;&|( \t])sudo[ \t]/) report(ln, "DL3004", "do not use sudo")
        if (args ~ /(^|[;&|( \t])apt[ \t]+(install|update|upgrade|remove)/) report(ln, "DL3027", "do not use apt, use apt-get")
        if (args ~ /(^|[;&|( \t])cd[ \t]+[^ \t;&|]+/ ) report(ln, "DL3003", "use WORKDIR to switch to a directory")
        if (args ~ /[^|]\|[^|]/ && !pipefail) report(ln, "DL4006", "set SHELL -o pipefail before RUN with a pipe")
        if (args ~ /apt-get[ \t].*install/) {
          if (args !~ /--no-install-recommends/) report(ln, "DL3015", "avoid additional packages by specifying --no-install-recommends")
          if (args !~ /(^|[ \t])(-y|--yes|-[a-z]*y[a-z]*|--assume-yes|-qq?y)([ \t]|$)/) report(ln, "DL3014", "use the -y switch to avoid manual input: apt-get -y install")
        }
        if (args ~ /apt-get[ \t]+(-[^ \t]+[ \t]+)*(update|install)/ && args !~ /rm[ \t]+-(rf|fr|r)[ \t]+[^;&|]*\/var\/lib\/apt\/lists/)
          report(ln, "DL3009", "delete the apt-get lists after installing something (rm -rf /var/lib/apt/lists/*)")
      }
    }
    BEGIN { bad = 0; nfrom = 0; pipefail = 0; cur = ""; start = 0; pend_acc = "" }
    {
      line = $0
      sub(/\r$/, "", line)
      if (line ~ /^[ \t]*#/) {
        if (cur == "" && match(line, /hadolint[ \t]+ignore=[A-Za-z0-9,]+/)) {
          ids = substr(line, RSTART, RLENGTH); sub(/.*ignore=/, "", ids)
          pend_acc = (pend_acc == "" ? "" : pend_acc ",") ids
        }
        next                                         # comments, also inside continuations
      }
      if (cur == "" && line ~ /^[ \t]*$/) next
      if (cur == "") { start = NR; ignore[NR] = pend_acc; pend_acc = "" }
      if (line ~ /\\[ \t]*$/) { sub(/\\[ \t]*$/, "", line); cur = cur " " line; next }
      cur = cur " " line
      instruction(start, cur)
      cur = ""
    }
    END {
      if (cur != "") instruction(start, cur)
      if (nfrom == 0) { report(1, "IOF003", "no FROM instruction"); exit bad }
      if (nfrom < 2) report(final_from_line, "IOF003", "use a multi-stage build (build stage + small runtime stage)")
      if (!final_health) report(final_from_line, "IOF002", "the final stage has no HEALTHCHECK")
      u = final_user; sub(/:.*/, "", u)
      if (final_user != "" && (u == "root" || u == "0")) report(user_line, "DL3002", "last USER should not be root")
      if (REQUIRE_USER && (final_user == "" || u == "root" || u == "0"))
        report(final_from_line, "IOF001", "the final stage must switch to a non-root USER")
      exit bad
    }
  ' "$f"; then
    status=1
  fi
done
exit "$status"
