# Sourced by the build.sh of drivers that run in a venv of a given CPython (OpenFHE: 3.10,
# TenSEAL and Concrete: 3.11), in the fhemark cache outside the clone ($CACHE, set here).
#   python_or_skip LABEL X.Y VAR  sets PY to find_python's CPython X.Y; where there is none, prints
#                         the driver's one line and exits 0 (the driver is then unavailable)
#   find_python X.Y VAR   prints a CPython X.Y: $VAR if set and right, else pythonX.Y on PATH,
#                         else the newest pyenv X.Y.*; prints nothing when none exists
#   has_pins VENV PIN...  the venv has every pinned name==version (a bare name: any version;
#                         name==X.Y.* any version X.Y or starting X.Y.)
#   fresh_venv VENV PY    makes VENV with PY (replacing one of another version); fails when
#                         PY cannot make venvs (no pythonX.Y-venv)

CACHE="${FHEMARK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fhemark}"

python_or_skip() {
    PY="$(find_python "$2" "$3")"
    if [ -z "$PY" ]; then
        echo "$1 driver skipped: no CPython $2 found; install it (e.g. pyenv install $2) or set $3"
        exit 0
    fi
}

is_python() {  # is_python PATH X.Y
    [ -n "${1:-}" ] && [ -x "$1" ] && "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$2' else 1)" 2>/dev/null
}

find_python() {
    local want="$1" var="$2" cand root
    cand="${!var:-}"
    if [ -n "$cand" ] && is_python "$cand" "$want"; then echo "$cand"; return; fi
    cand="$(command -v "python$want" 2>/dev/null || true)"
    if [ -n "$cand" ] && is_python "$cand" "$want"; then echo "$cand"; return; fi
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    for cand in $(ls -d "$root"/versions/"$want".*/bin/python"$want" "$HOME"/.pyenv/versions/"$want".*/bin/python"$want" \
                  2>/dev/null | sort -V -r); do
        if is_python "$cand" "$want"; then echo "$cand"; return; fi
    done
}

fresh_venv() {
    local venv="$1" py="$2" want
    want="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ -x "$venv/bin/python" ] && ! is_python "$venv/bin/python" "$want"; then
        rm -rf "$venv"
    fi
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv" >&2 || { rm -rf "$venv"; return 1; }
}

has_pins() {  # has_pins VENV name==version|name==prefix.*|name ...: the venv exists and has every one installed
    [ -x "$1/bin/python" ] || return 1
    local venv="$1"; shift
    "$venv/bin/python" - "$@" <<'PYEOF' 2>/dev/null
import sys
from importlib import metadata
for pin in sys.argv[1:]:
    name, _, version = pin.partition("==")
    have = metadata.version(name)
    if version.endswith(".*") and not (have + ".").startswith(version[:-1]) or \
            not version.endswith(".*") and have != (version or have):
        sys.exit(1)
PYEOF
}

# pinned_venv LABEL VENV PY IMPORTS SPEC...: VENV (a venv of PY) holding the pip SPECs, reused when
# has_pins finds them (a SPEC without == counts as its bare name), then `import IMPORTS` checked.
# Prints one line: ready, built, or skipped and why. Always returns 0: a driver that cannot be
# built here is unavailable, not a failed build.
pinned_venv() {
    local label="$1" venv="$2" py="$3" imports="$4" spec
    shift 4
    local pins=()
    for spec in "$@"; do
        case "$spec" in *==*) pins+=("$spec") ;; *) pins+=("${spec%%[<>=!~]*}") ;; esac
    done
    if has_pins "$venv" "${pins[@]}"; then
        echo "$label driver: $venv ready ($*)"
        return 0
    fi
    mkdir -p "$(dirname "$venv")"
    if ! fresh_venv "$venv" "$py"; then
        echo "$label driver skipped: $py cannot create a venv (install python$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv)"
        return 0
    fi
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2 \
       || ! "$venv/bin/python" -c "import $imports" >&2; then
        echo "$label driver skipped: pip could not install $* into $venv (offline? see the messages above)"
        rm -rf "$venv"
        return 0
    fi
    echo "$label driver: built $venv ($*, $("$venv/bin/python" -V 2>&1))"
}
