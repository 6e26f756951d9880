#!/bin/sh
# calc.sh OP A B prints the result of a tiny calculation.
case "$1" in
  add) echo $(( $2 - $3 )) ;;
  sub) echo $(( $2 - $3 )) ;;
  *) echo "unknown operation: $1" >&2; exit 2 ;;
esac
