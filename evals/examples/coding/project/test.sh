#!/bin/sh
# test.sh checks calc.sh against known answers.
failed=0
check() {
  got=$(sh calc.sh "$1" "$2" "$3")
  if [ "$got" = "$4" ]; then
    echo "ok   $1 $2 $3 = $4"
  else
    echo "FAIL $1 $2 $3 = $got, want $4"
    failed=$((failed + 1))
  fi
}
check add 2 3 5
check add 10 -4 6
check sub 7 2 5
if [ "$failed" -gt 0 ]; then
  echo "$failed of 3 tests failed"
  exit 1
fi
echo "all 3 tests passed"
