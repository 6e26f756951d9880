#!/bin/sh
# convert_currency for the quickstart suite: reads the call's JSON arguments
# on stdin and prints the converted amount. Rates are fixed so runs repeat.
args=$(cat)
amount=$(printf '%s' "$args" | sed -n 's/.*"amount":[ ]*\([0-9.]*\).*/\1/p')
from=$(printf '%s' "$args" | sed -n 's/.*"from":[ ]*"\([A-Z]*\)".*/\1/p')
to=$(printf '%s' "$args" | sed -n 's/.*"to":[ ]*"\([A-Z]*\)".*/\1/p')
case "$from$to" in
  EURUSD) rate=1.09 ;;
  USDEUR) rate=0.92 ;;
  GBPUSD) rate=1.27 ;;
  *) echo "no rate for $from to $to" >&2; exit 1 ;;
esac
awk -v a="$amount" -v r="$rate" -v t="$to" 'BEGIN { printf "%.2f %s\n", a * r, t }'
