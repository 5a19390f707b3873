# Sourced by the device scripts that run several steps in one call: `limit` (the call's
# seconds) and `out` (the output folder) must be set first.
left() { echo $((limit - SECONDS)); }
step() {  # step NAME SECONDS-NEEDED COMMAND...: runs COMMAND under what is left, if enough is
  local name=$1 need=$2
  shift 2
  if [ "$(left)" -lt "$need" ]; then
    echo "$name: skipped, $(left) s left of $limit" | tee -a "$out/summary.txt"
    return
  fi
  timeout "$(left)" "$@"
  echo "$name: rc=$? at $SECONDS s" | tee -a "$out/summary.txt"
}
