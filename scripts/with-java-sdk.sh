#!/usr/bin/env bash
# Runs a command with the official Durable Task Java SDK ready for the gRPC tests:
#
#   scripts/with-java-sdk.sh cargo test -p taskhub-grpc --test java_sdk_worker
#
# * Installs Debian's `maven` with apt-get when mvn is missing (as root, or through sudo); needs
#   a JDK 17 or later (java and javac).
# * Builds the scenario program crates/taskhub-grpc/tests/java (a Maven project pinning
#   `com.microsoft:durabletask-client`, see its pom.xml) into .java-sdk/target (git-ignored),
#   every time (cheap when nothing changed), with its Maven repository in .java-sdk/m2: the SDK
#   and its dependencies come from Maven Central; nothing is installed globally.
# * Exports TASKHUB_JAVA_SDK (the program's classpath: its classes, then the SDK's jars) for the
#   command; the Java SDK test (crates/taskhub-grpc/tests/java_sdk_worker.rs) runs `java
#   Scenarios` with it as CLASSPATH and fails without it, saying how to run it.
# * If anything cannot be installed or built, this fails loudly.
set -euo pipefail

DURABLETASK_JAVA_VERSION=1.5.0 # as pinned in the pom.xml; checked below
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
POM="$ROOT/crates/taskhub-grpc/tests/java/pom.xml"
DIR="$ROOT/.java-sdk"
CLASSPATH_FILE="$DIR/classpath.txt"

die() { echo "with-java-sdk: $*" >&2; exit 1; }
[ $# -gt 0 ] || die "usage: scripts/with-java-sdk.sh <command> [args...]"
command -v java >/dev/null && command -v javac >/dev/null \
  || die "a JDK 17 or later is needed (java and javac: apt-get install openjdk-17-jdk-headless)"
JAVA_MAJOR="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
[ "${JAVA_MAJOR%%.*}" -ge 17 ] 2>/dev/null || die "a JDK 17 or later is needed, found Java ${JAVA_MAJOR:-?}"

if ! command -v mvn >/dev/null; then
  echo "with-java-sdk: installing Debian's maven (apt-get)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "mvn is missing and this user cannot install it (not root, no sudo): apt-get install maven"
    SUDO="sudo"
  fi
  command -v apt-get >/dev/null || die "mvn is missing and apt-get is not available: install Maven 3"
  $SUDO apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven >&2 || die "apt-get install maven failed"
  command -v mvn >/dev/null || die "maven installed but mvn is missing"
fi

grep -q "<durabletask.version>$DURABLETASK_JAVA_VERSION</durabletask.version>" "$POM" \
  || die "$POM does not pin durabletask-client $DURABLETASK_JAVA_VERSION"
mkdir -p "$DIR"
rm -f "$CLASSPATH_FILE"
mvn -q -B -Dstyle.color=never -f "$POM" -Dmaven.repo.local="$DIR/m2" \
  compile dependency:build-classpath -Dmdep.outputFile="$CLASSPATH_FILE" >&2 \
  || die "cannot build $(dirname "$POM") (mvn failed; see above)"
[ -f "$DIR/target/classes/Scenarios.class" ] || die "Scenarios.class was not built"
[ -s "$CLASSPATH_FILE" ] || die "mvn wrote no classpath"
grep -q "durabletask-client-$DURABLETASK_JAVA_VERSION.jar" "$CLASSPATH_FILE" \
  || die "the classpath has no durabletask-client $DURABLETASK_JAVA_VERSION: $(cat "$CLASSPATH_FILE")"

export TASKHUB_JAVA_SDK="$DIR/target/classes:$(cat "$CLASSPATH_FILE")"
exec "$@"
