# Shared by the install scripts (source it): idempotent, timed install steps.
# step NAME CHECK_CMD INSTALL_CMD: runs INSTALL_CMD unless CHECK_CMD succeeds; prints the time.

step() {
    local name=$1 check=$2 install=$3 t0 t1
    t0=$(date +%s.%N)
    if eval "$check" >/dev/null 2>&1; then
        t1=$(date +%s.%N)
        printf '%-28s already done (%.1f s)\n' "$name" "$(echo "$t1 - $t0" | bc)"
        return
    fi
    eval "$install"
    t1=$(date +%s.%N)
    printf '%-28s installed (%.1f s)\n' "$name" "$(echo "$t1 - $t0" | bc)"
}

command -v bc >/dev/null || { apt-get update -qq && apt-get install -y -qq bc >/dev/null; }

APT_UPDATED=0
apt_install() {
    if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The repo's .gitignore is not ours to edit: the cache dir ignores itself.
mkdir -p .cache && { test -f .cache/.gitignore || echo '*' > .cache/.gitignore; }
