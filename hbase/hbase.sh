#!/usr/bin/env bash
# A real Apache HBase for rowsearch's tests and for developers: standalone
# (master, region server and ZooKeeper in one JVM, tables on the local
# file system) with HBase's Thrift gateway (the `Hbase` service) and its
# Thrift2 gateway (`THBaseService`), all on loopback ports picked free.
# The jars come from Maven Central through hbase/pom.xml and stay in
# Maven's cache (~/.m2), so only the first run downloads (~110 MB).
#
#   hbase/hbase.sh start [DIR]   start, wait until ready, print the addresses
#   hbase/hbase.sh stop [DIR]    stop what start started
#   hbase/hbase.sh restart [DIR] stop and start again: same ports, data kept
#   hbase/hbase.sh status [DIR]  the addresses, exit 1 when not running
#   hbase/hbase.sh classpath     resolve the jars (and print the class path)
#   hbase/hbase.sh endpoint      build the replication endpoint's jar (its path)
#   hbase/hbase.sh disable-peer [DIR] | enable-peer [DIR]
#                                stop and resume shipping writes to rowsearch
#                                (HBase queues them meanwhile)
#
# The master loads rowsearch's replication endpoint (hbase/replication/,
# compiled here with javac against the same jars) and, once ready, gets the
# peer `rowsearch` (HBASE_REPLICATION=0: none): every write to a table whose
# families have REPLICATION_SCOPE 1 reaches rowsearch's change feed.
#
# DIR (default target/hbase) holds the configuration, the data, the logs,
# the pids and `addresses` (lines `thrift=HOST:PORT`, `thrift2=HOST:PORT`,
# `zookeeper=HOST:PORT`: HBase's own Java client finds the cluster there).
# HBASE_VERSION (default 2.6.1) picks the release; HBASE_HEAP (default 1g)
# the heap of the master and region server's JVM, HBASE_THRIFT_HEAP (384m)
# each gateway's (benchmarks of the full corpus take 4g and 1g); Java 17
# and Maven needed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
version=${HBASE_VERSION:-2.6.1}
command=${1:-}
dir=${2:-$repo/target/hbase}

die() { echo "hbase.sh: $*" >&2; exit 1; }

classpath() {
    local cache=$repo/target/hbase-classpath-$version.txt first=""
    # (Not a pipe into `head`: under pipefail its early close can fail the
    # check and resolve again for nothing.)
    [ -s "$cache" ] && first=$(cut -d: -f1 "$cache")
    if [ -z "$first" ] || [ ! -f "$first" ]; then
        command -v mvn >/dev/null || die "Maven (mvn) is not installed"
        mkdir -p "$repo/target"
        echo "hbase.sh: resolving HBase $version's jars with Maven (cached in ~/.m2)" >&2
        mvn -B -q -f "$here/pom.xml" -Dhbase.version="$version" \
            dependency:build-classpath -Dmdep.outputFile="$cache" >&2 \
            || die "Maven could not resolve HBase $version's jars (see its output above)"
    fi
    cat "$cache"
}

# rowsearch's replication endpoint (hbase/replication/): compiled against
# HBase's own jars into target/, again whenever its sources change.
endpoint_jar() {
    local src=$here/replication sum jar
    sum=$(cat "$src"/rowsearch/hbase/*.java | sha1sum | cut -c1-12)
    jar=$repo/target/rowsearch-hbase-replication-$version-$sum.jar
    if [ ! -s "$jar" ]; then
        command -v javac >/dev/null || die "javac is not installed (the replication endpoint needs a JDK 17)"
        local classes
        classes=$(mktemp -d)
        javac -nowarn -d "$classes" -cp "$(classpath)" "$src"/rowsearch/hbase/*.java >&2 \
            || die "the replication endpoint did not compile (output above)"
        (cd "$classes" && jar cf "$jar.tmp" rowsearch) && mv "$jar.tmp" "$jar"
        rm -rf "$classes"
    fi
    echo "$jar"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# The flags HBase's own bin/hbase passes on Java 17.
java_flags=(
    -Djava.net.preferIPv4Stack=true
    -Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true
    --add-modules jdk.unsupported
    --add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    --add-opens java.base/java.util.concurrent=ALL-UNNAMED
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.security.jgss/sun.security.krb5=ALL-UNNAMED
    --add-exports java.base/sun.net.dns=ALL-UNNAMED
    --add-exports java.base/sun.net.util=ALL-UNNAMED
)

write_conf() {
    local zk=$1
    mkdir -p "$dir/conf" "$dir/logs"
    cat > "$dir/conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.cluster.distributed</name><value>false</value></property>
  <property><name>hbase.rootdir</name><value>file://$dir/root</value></property>
  <property><name>hbase.zookeeper.property.dataDir</name><value>$dir/zookeeper</value></property>
  <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
  <property><name>hbase.zookeeper.property.clientPort</name><value>$zk</value></property>
  <property><name>hbase.localcluster.assign.random.ports</name><value>true</value></property>
  <property><name>hbase.master.info.port</name><value>-1</value></property>
  <property><name>hbase.regionserver.info.port</name><value>-1</value></property>
  <property><name>hbase.thrift.info.port</name><value>-1</value></property>
  <property><name>hbase.master.hostname</name><value>localhost</value></property>
  <property><name>hbase.regionserver.hostname</name><value>localhost</value></property>
  <property><name>hbase.unsafe.stream.capability.enforce</name><value>false</value></property>
  <property><name>hbase.tmp.dir</name><value>$dir/tmp</value></property>
  <!-- Many small tables (the HTTP suite over HBase makes a namespace per
       test): no 2 MB memstore chunk per region, a small block cache. -->
  <property><name>hbase.hregion.memstore.mslab.enabled</name><value>false</value></property>
  <property><name>hfile.block.cache.size</name><value>0.1</value></property>
  <!-- Replication (rowsearch's peer): a source with nothing to ship looks
       again after 100 ms instead of 1 s, the stream's lag then the
       tailer's (search-api/BENCHMARKS.md, "Following HBase"). -->
  <property><name>replication.source.sleepforretries</name><value>100</value></property>
</configuration>
XML
    cat > "$dir/conf/log4j.properties" <<'PROPS'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop.hbase.zookeeper=WARN
PROPS
}

launch() { # name heap main-class args...
    local name=$1 heap=$2 main=$3
    shift 3
    java -Xmx"$heap" "${java_flags[@]}" -Dhbase.log.dir="$dir/logs" \
        -cp "$dir/conf:$(endpoint_jar):$(classpath)" "$main" "$@" > "$dir/logs/$name.log" 2>&1 &
    echo $! > "$dir/$name.pid"
}

running() {
    local pid
    for name in master thrift thrift2; do
        [ -f "$dir/$name.pid" ] || return 1
        pid=$(cat "$dir/$name.pid")
        kill -0 "$pid" 2>/dev/null || return 1
    done
}

stop() {
    local name pid
    for name in thrift2 thrift master; do
        [ -f "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/$name.pid"
    done
}

start() {
    command -v java >/dev/null || die "Java is not installed (HBase needs Java 17)"
    if running; then
        cat "$dir/addresses"
        return
    fi
    stop
    rm -rf "$dir"
    mkdir -p "$dir"
    classpath > /dev/null
    local zk thrift thrift2
    zk=$(free_port); thrift=$(free_port); thrift2=$(free_port)
    write_conf "$zk"
    printf 'thrift=127.0.0.1:%s\nthrift2=127.0.0.1:%s\nzookeeper=127.0.0.1:%s\n' "$thrift" "$thrift2" "$zk" \
        > "$dir/addresses"
    # HBASE_WATCH_PID: stop (and remove DIR) when that process ends (a test
    # process that started it, however it ends).
    if [ -n "${HBASE_WATCH_PID:-}" ]; then
        setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; bash "$2" stop "$3"; rm -rf "$3"' \
            watch "$HBASE_WATCH_PID" "$here/hbase.sh" "$dir" < /dev/null > /dev/null 2>&1 &
    fi
    boot
}

# The address of one service from DIR/addresses: its port.
port_of() {
    sed -n "s/^$1=127.0.0.1://p" "$dir/addresses"
}

# Stops HBase and starts it again on the same ports with its data (the
# tables, the replication peer and its queues): what a test of a restart
# in the middle of writes needs.
restart() {
    [ -s "$dir/addresses" ] || die "nothing started in $dir to restart"
    stop
    boot
}

boot() {
    local zk thrift thrift2
    zk=$(port_of zookeeper); thrift=$(port_of thrift); thrift2=$(port_of thrift2)
    launch master "${HBASE_HEAP:-2g}" org.apache.hadoop.hbase.master.HMaster start
    launch thrift "${HBASE_THRIFT_HEAP:-384m}" org.apache.hadoop.hbase.thrift.ThriftServer -b 127.0.0.1 -p "$thrift" start
    launch thrift2 "${HBASE_THRIFT_HEAP:-384m}" org.apache.hadoop.hbase.thrift2.ThriftServer -b 127.0.0.1 -p "$thrift2" start
    # Ready: HBase's own gateway creates, disables and deletes a table
    # (master, region server and hbase:meta up). Up to 180 s on 2 cores.
    local deadline=$((SECONDS + ${HBASE_START_TIMEOUT:-180})) last=""
    until last=$(python3 "$here/ready.py" "127.0.0.1:$thrift" 2>&1); do
        if ! running; then
            tail -n 40 "$dir"/logs/*.log >&2 || true
            stop
            die "HBase stopped while starting (logs above, in $dir/logs)"
        fi
        if [ $SECONDS -ge $deadline ]; then
            tail -n 40 "$dir"/logs/master.log >&2 || true
            stop
            die "HBase not ready after ${HBASE_START_TIMEOUT:-180} s (last probe: $last)"
        fi
        sleep 1
    done
    # Thrift2 answers once its port is open (it shares the cluster).
    until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $thrift2), 2)" 2>/dev/null; do
        [ $SECONDS -lt $deadline ] || { stop; die "HBase's Thrift2 gateway did not open its port"; }
        sleep 0.5
    done
    # rowsearch follows every write through HBase's replication: the peer
    # `rowsearch` (hbase/replication/, FeedEndpoint) ships the writes to
    # tables whose families have REPLICATION_SCOPE 1 (rowsearch makes its
    # tables so) into rowsearch's change feed. HBASE_REPLICATION=0: no peer.
    if [ "${HBASE_REPLICATION:-1}" != 0 ]; then
        java -Xmx256m "${java_flags[@]}" -cp "$dir/conf:$(endpoint_jar):$(classpath)" \
            rowsearch.hbase.AddPeer rowsearch > "$dir/logs/add-peer.log" 2>&1 \
            || { tail -n 20 "$dir/logs/add-peer.log" >&2; stop; die "the replication peer could not be added"; }
    fi
    cat "$dir/addresses"
}

# Disables or enables the peer `rowsearch` of the HBase in DIR.
peer() {
    running || die "no HBase running in $dir"
    java -Xmx256m "${java_flags[@]}" -cp "$dir/conf:$(endpoint_jar):$(classpath)" \
        rowsearch.hbase.AddPeer rowsearch "$1" 2>> "$dir/logs/add-peer.log"
}

case "$command" in
    start) start ;;
    stop) stop ;;
    restart) restart ;;
    status) running && cat "$dir/addresses" ;;
    classpath) classpath ;;
    endpoint) endpoint_jar ;;
    disable-peer) peer disable ;;
    enable-peer) peer enable ;;
    *) die "usage: hbase.sh start|stop|restart|status|classpath|endpoint|disable-peer|enable-peer [DIR]" ;;
esac
