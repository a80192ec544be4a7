// HBase's own Java client (hbase-client and hbase-thrift 2.6.1) driving a
// store: the same steps, printed one line each, against a real HBase (its
// native client, through ZooKeeper) and against rowsearch's Thrift2 gateway
// (the client's `ThriftConnection`). tests/tests/thrift/java_client.rs
// compiles and runs it against both and compares the lines.
//
//   java -cp CLASSPATH ClientSuite native 127.0.0.1:ZKPORT OUTPUT
//   java -cp CLASSPATH ClientSuite thrift 127.0.0.1:PORT OUTPUT
//   java -cp CLASSPATH ClientSuite http 127.0.0.1:PORT OUTPUT    (Thrift over HTTP)
//
// The answers go to OUTPUT (the client's logs to the terminal). A line is `step: answer`. Timestamps the store chose print as `now`
// (within an hour of the client's clock); an error prints as `ERR` and the
// first HBase exception named in its chain of causes and messages, so the
// native client's exception classes and the gateway's `TIOError` messages
// compare.

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.filter.BinaryPrefixComparator;
import org.apache.hadoop.hbase.filter.BitComparator;
import org.apache.hadoop.hbase.filter.ColumnCountGetFilter;
import org.apache.hadoop.hbase.filter.ColumnPaginationFilter;
import org.apache.hadoop.hbase.filter.ColumnPrefixFilter;
import org.apache.hadoop.hbase.filter.ColumnRangeFilter;
import org.apache.hadoop.hbase.filter.ColumnValueFilter;
import org.apache.hadoop.hbase.filter.DependentColumnFilter;
import org.apache.hadoop.hbase.filter.FamilyFilter;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.filter.FilterList;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.filter.FuzzyRowFilter;
import org.apache.hadoop.hbase.filter.InclusiveStopFilter;
import org.apache.hadoop.hbase.filter.KeyOnlyFilter;
import org.apache.hadoop.hbase.filter.MultiRowRangeFilter;
import org.apache.hadoop.hbase.filter.MultipleColumnPrefixFilter;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.filter.PrefixFilter;
import org.apache.hadoop.hbase.filter.QualifierFilter;
import org.apache.hadoop.hbase.filter.RandomRowFilter;
import org.apache.hadoop.hbase.filter.RegexStringComparator;
import org.apache.hadoop.hbase.filter.RowFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueExcludeFilter;
import org.apache.hadoop.hbase.filter.SingleColumnValueFilter;
import org.apache.hadoop.hbase.filter.SkipFilter;
import org.apache.hadoop.hbase.filter.SubstringComparator;
import org.apache.hadoop.hbase.filter.TimestampsFilter;
import org.apache.hadoop.hbase.filter.ValueFilter;
import org.apache.hadoop.hbase.filter.WhileMatchFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.Pair;

public final class ClientSuite {
  private static PrintStream out;
  private static final long NOW = System.currentTimeMillis();
  private static final Pattern EXCEPTION =
    Pattern.compile("(TableNotFound|TableExists|TableNotEnabled|TableNotDisabled|NoSuchColumnFamily"
      + "|NamespaceNotFound|DoNotRetryIO|IllegalArgument|UnsupportedOperation)Exception");

  private ClientSuite() {
  }

  private static byte[] b(String s) {
    return Bytes.toBytes(s);
  }

  private static String s(byte[] bytes) {
    return Bytes.toStringBinary(bytes);
  }

  private static String ts(long t) {
    if (t < 1_000_000_000_000L) {
      return Long.toString(t);
    }
    return Math.abs(t - NOW) < 3_600_000L ? "now" : "ts" + t;
  }

  private static String cell(Cell c) {
    return s(CellUtil.cloneFamily(c)) + ":" + s(CellUtil.cloneQualifier(c)) + "@" + ts(c.getTimestamp())
      + "=" + s(CellUtil.cloneValue(c));
  }

  private static String result(Result r) {
    if (r == null) {
      return "null";
    }
    if (r.isEmpty()) {
      return "empty";
    }
    StringBuilder sb = new StringBuilder(s(r.getRow())).append(" {");
    for (Cell c : r.rawCells()) {
      sb.append(' ').append(cell(c));
    }
    return sb.append(" }").toString();
  }

  private static String scan(Table t, Scan scan) throws Exception {
    List<String> rows = new ArrayList<>();
    try (ResultScanner rs = t.getScanner(scan)) {
      for (Result r : rs) {
        rows.add(result(r));
      }
    }
    return rows.size() + " rows " + rows;
  }

  private static String error(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      Matcher m = EXCEPTION.matcher(t.getClass().getName());
      if (m.find()) {
        return "ERR " + m.group();
      }
      if (t.getMessage() != null) {
        m = EXCEPTION.matcher(t.getMessage());
        if (m.find()) {
          return "ERR " + m.group();
        }
      }
    }
    return "ERR other";
  }

  private static void step(String name, Callable<Object> body) {
    String answer;
    try {
      Object got = body.call();
      answer = got instanceof Result ? result((Result) got) : String.valueOf(got);
    } catch (Throwable e) {
      answer = error(e);
      System.err.println(name + ": " + e);
    }
    out.println(name + ": " + answer);
    out.flush();
  }

  private static Scan scanWith(Filter f) {
    return new Scan().setFilter(f);
  }

  private static Get getWith(String row, Filter f) {
    return new Get(b(row)).setFilter(f);
  }

  public static void main(String[] args) throws Exception {
    out = new PrintStream(new java.io.FileOutputStream(args[2]), true, "UTF-8");
    Configuration conf = HBaseConfiguration.create();
    String[] hostPort = args[1].split(":");
    switch (args[0]) {
      case "native":
        conf.set("hbase.zookeeper.quorum", hostPort[0]);
        conf.set("hbase.zookeeper.property.clientPort", hostPort[1]);
        conf.setInt("hbase.client.retries.number", 3);
        break;
      case "thrift":
      case "http":
        conf.set("hbase.client.connection.impl",
          "org.apache.hadoop.hbase.thrift2.client.ThriftConnection");
        conf.set("hbase.thrift.server.name",
          args[0].equals("http") ? "http://" + hostPort[0] : hostPort[0]);
        conf.set("hbase.thrift.server.port", hostPort[1]);
        if (args[0].equals("http")) {
          conf.set("hbase.thrift.client.builder.class",
            "org.apache.hadoop.hbase.thrift2.client.ThriftConnection$HTTPThriftClientBuilder");
        }
        break;
      default:
        throw new IllegalArgumentException("native, thrift or http");
    }
    try (Connection conn = ConnectionFactory.createConnection(conf);
      Admin admin = conn.getAdmin()) {
      run(conn, admin);
    }
  }

  private static void run(Connection conn, Admin admin) throws Exception {
    TableName name = TableName.valueOf("java_suite");
    if (admin.tableExists(name)) {
      if (admin.isTableEnabled(name)) {
        admin.disableTable(name);
      }
      admin.deleteTable(name);
    }
    ColumnFamilyDescriptor f = ColumnFamilyDescriptorBuilder.newBuilder(b("f")).setMaxVersions(3).build();
    ColumnFamilyDescriptor g = ColumnFamilyDescriptorBuilder.newBuilder(b("g")).build();
    TableDescriptor desc = TableDescriptorBuilder.newBuilder(name).setColumnFamily(f).setColumnFamily(g).build();
    step("admin create", () -> {
      admin.createTable(desc, new byte[][] { b("r10") });
      return "ok";
    });
    step("admin create again", () -> {
      admin.createTable(desc);
      return "ok";
    });
    step("admin exists", () -> admin.tableExists(name));
    step("admin listed", () -> Arrays.asList(admin.listTableNames()).contains(name));
    step("admin families", () -> {
      List<String> out = new ArrayList<>();
      for (ColumnFamilyDescriptor d : admin.getDescriptor(name).getColumnFamilies()) {
        out.add(d.getNameAsString() + " versions " + d.getMaxVersions());
      }
      return out;
    });
    step("admin enabled", () -> admin.isTableEnabled(name));
    step("admin enable an enabled table", () -> {
      admin.enableTable(name);
      return "ok";
    });
    step("admin disable", () -> {
      admin.disableTable(name);
      return admin.isTableDisabled(name);
    });
    step("admin disable a disabled table", () -> {
      admin.disableTable(name);
      return "ok";
    });
    step("admin delete an enabled table", () -> {
      admin.enableTable(name);
      admin.deleteTable(name);
      return "ok";
    });
    step("admin unknown table", () -> admin.getDescriptor(TableName.valueOf("no_such_table")));

    Table t = conn.getTable(name);
    // 20 rows r00..r19: f:a at 100 and 200 (every row), f:b at 100 (even
    // rows), g:x with no timestamp (every third row), f:c "cc<i>" at 300.
    step("put rows", () -> {
      List<Put> puts = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        String row = String.format("r%02d", i);
        Put p = new Put(b(row));
        p.addColumn(b("f"), b("a"), 100, b("a100-" + i));
        p.addColumn(b("f"), b("a"), 200, b("a200-" + i));
        if (i % 2 == 0) {
          p.addColumn(b("f"), b("b"), 100, b("b" + i));
        }
        if (i % 3 == 0) {
          p.addColumn(b("g"), b("x"), b("x" + i));
        }
        p.addColumn(b("f"), b("c"), 300, b("cc" + i));
        puts.add(p);
      }
      t.put(puts);
      return "ok";
    });
    step("put without timestamp", () -> {
      t.put(new Put(b("n1")).addColumn(b("f"), b("a"), b("first")).addColumn(b("g"), b("x"), b("one")));
      return t.get(new Get(b("n1")));
    });
    step("put without timestamp over one version", () -> {
      t.put(new Put(b("n1")).addColumn(b("g"), b("x"), 5, b("older")));
      return t.get(new Get(b("n1")).addFamily(b("g")).readAllVersions());
    });
    step("put with a row timestamp", () -> {
      t.put(new Put(b("n2"), 42).addColumn(b("f"), b("a"), b("v42")));
      return t.get(new Get(b("n2")));
    });
    step("put into an unknown family", () -> {
      t.put(new Put(b("n3")).addColumn(b("nope"), b("a"), b("v")));
      return "ok";
    });

    step("get row", () -> t.get(new Get(b("r00"))));
    step("get missing row", () -> t.get(new Get(b("zz"))));
    step("get column", () -> t.get(new Get(b("r02")).addColumn(b("f"), b("b"))));
    step("get family", () -> t.get(new Get(b("r03")).addFamily(b("g"))));
    step("get all versions", () -> t.get(new Get(b("r01")).readAllVersions()));
    step("get two versions", () -> t.get(new Get(b("r01")).readVersions(2).addFamily(b("f"))));
    step("get timestamp", () -> t.get(new Get(b("r01")).setTimestamp(100)));
    step("get time range", () -> t.get(new Get(b("r01")).setTimeRange(100, 201).readAllVersions()));
    step("get store limit", () -> t.get(new Get(b("r00")).setMaxResultsPerColumnFamily(1)));
    step("get store offset", () -> t.get(new Get(b("r00")).setRowOffsetPerColumnFamily(1)));
    step("get store limit and offset",
      () -> t.get(new Get(b("r00")).setMaxResultsPerColumnFamily(1).setRowOffsetPerColumnFamily(1)));
    step("get existence only", () -> t.get(new Get(b("r00")).setCheckExistenceOnly(true)).getExists());
    step("get list", () -> {
      List<String> out = new ArrayList<>();
      for (Result r : t.get(Arrays.asList(new Get(b("r04")), new Get(b("zz")), new Get(b("r05"))))) {
        out.add(result(r));
      }
      return out;
    });
    step("exists", () -> t.exists(new Get(b("r06"))));
    step("exists missing", () -> t.exists(new Get(b("zz"))));
    step("exists column missing", () -> t.exists(new Get(b("r01")).addColumn(b("f"), b("b"))));
    step("exists with a filter matching nothing",
      () -> t.exists(getWith("r06", new ValueFilter(CompareOperator.EQUAL, new BinaryComparator(b("nope"))))));
    step("exists list", () -> Arrays.toString(t.exists(Arrays.asList(new Get(b("r00")), new Get(b("zz"))))));
    step("get with a value filter",
      () -> t.get(getWith("r06", new ValueFilter(CompareOperator.EQUAL, new BinaryComparator(b("b6"))))));

    step("scan", () -> scan(t, new Scan()));
    step("scan limit", () -> scan(t, new Scan().setLimit(3)));
    step("scan caching", () -> scan(t, new Scan().setCaching(2).withStartRow(b("r05")).withStopRow(b("r09"))));
    step("scan range", () -> scan(t, new Scan().withStartRow(b("r08")).withStopRow(b("r11"))));
    step("scan reversed", () -> scan(t, new Scan().setReversed(true).setLimit(4)));
    step("scan reversed caching", () -> scan(t, new Scan().setReversed(true).setCaching(1)
      .withStartRow(b("r05")).withStopRow(b("r01"))));
    step("scan family", () -> scan(t, new Scan().addFamily(b("g"))));
    step("scan column", () -> scan(t, new Scan().addColumn(b("f"), b("b")).setLimit(4)));
    step("scan all versions", () -> scan(t, new Scan().readAllVersions().setLimit(2)));
    step("scan time range", () -> scan(t, new Scan().setTimeRange(0, 150).setLimit(3)));
    step("scan family time range", () -> scan(t,
      new Scan().setColumnFamilyTimeRange(b("f"), 150, 250).setLimit(3)));
    step("scan family time range and all versions", () -> scan(t,
      new Scan().setColumnFamilyTimeRange(b("f"), 0, 250).readAllVersions().setLimit(2)));

    // Filters built in Java (sent as HBase's protobuf Filter).
    Scan some = new Scan().withStopRow(b("r07"));
    step("filter value binary", () -> scan(t, scanWith(new ValueFilter(CompareOperator.EQUAL,
      new BinaryComparator(b("b4"))))));
    step("filter value binary prefix", () -> scan(t, scanWith(new ValueFilter(CompareOperator.EQUAL,
      new BinaryPrefixComparator(b("cc1"))))));
    step("filter value regex", () -> scan(t, scanWith(new ValueFilter(CompareOperator.EQUAL,
      new RegexStringComparator("^a2.*-1[0-2]$")))));
    step("filter value substring", () -> scan(t, scanWith(new ValueFilter(CompareOperator.EQUAL,
      new SubstringComparator("C1")))));
    step("filter value not equal", () -> scan(t, new Scan(some).setFilter(new ValueFilter(
      CompareOperator.NOT_EQUAL, new BinaryPrefixComparator(b("a"))))));
    step("filter row less", () -> scan(t, scanWith(new RowFilter(CompareOperator.LESS,
      new BinaryComparator(b("r03"))))));
    step("filter row greater or equal", () -> scan(t, scanWith(new RowFilter(
      CompareOperator.GREATER_OR_EQUAL, new BinaryComparator(b("r18"))))));
    step("filter family", () -> scan(t, new Scan(some).setFilter(new FamilyFilter(CompareOperator.EQUAL,
      new BinaryComparator(b("g"))))));
    step("filter qualifier", () -> scan(t, new Scan(some).setFilter(new QualifierFilter(
      CompareOperator.GREATER, new BinaryComparator(b("a"))))));
    step("filter prefix", () -> scan(t, scanWith(new PrefixFilter(b("r1")))));
    step("filter key only", () -> scan(t, new Scan(some).setFilter(new KeyOnlyFilter())));
    step("filter key only length", () -> scan(t, new Scan(some).setFilter(new KeyOnlyFilter(true))));
    step("filter first key only", () -> scan(t, new Scan(some).setFilter(new FirstKeyOnlyFilter())));
    step("filter single column value", () -> scan(t, scanWith(new SingleColumnValueFilter(b("f"),
      b("b"), CompareOperator.EQUAL, b("b4")))));
    step("filter single column value if missing", () -> {
      SingleColumnValueFilter scv = new SingleColumnValueFilter(b("f"), b("b"), CompareOperator.NOT_EQUAL,
        b("b4"));
      scv.setFilterIfMissing(true);
      return scan(t, new Scan(some).setFilter(scv));
    });
    step("filter single column value exclude", () -> scan(t, scanWith(new SingleColumnValueExcludeFilter(
      b("f"), b("b"), CompareOperator.EQUAL, b("b6")))));
    step("filter column value", () -> scan(t, scanWith(new ColumnValueFilter(b("f"), b("c"),
      CompareOperator.GREATER_OR_EQUAL, b("cc18")))));
    step("filter column count get", () -> t.get(getWith("r00", new ColumnCountGetFilter(2))));
    step("filter column pagination", () -> scan(t, new Scan(some).setFilter(
      new ColumnPaginationFilter(2, 1))));
    step("filter column prefix", () -> scan(t, new Scan(some).setFilter(new ColumnPrefixFilter(b("b")))));
    step("filter multiple column prefix", () -> scan(t, new Scan(some).setFilter(
      new MultipleColumnPrefixFilter(new byte[][] { b("b"), b("x") }))));
    step("filter column range", () -> scan(t, new Scan(some).setFilter(
      new ColumnRangeFilter(b("b"), true, b("c"), false))));
    step("filter timestamps", () -> scan(t, new Scan(some).readAllVersions().setFilter(
      new TimestampsFilter(Arrays.asList(100L, 300L)))));
    step("filter page", () -> scan(t, scanWith(new PageFilter(3))));
    step("filter inclusive stop", () -> scan(t, scanWith(new InclusiveStopFilter(b("r02")))));
    step("filter dependent column", () -> scan(t, new Scan(some).readAllVersions().setFilter(
      new DependentColumnFilter(b("f"), b("b")))));
    step("filter dependent column drop", () -> scan(t, new Scan(some).readAllVersions().setFilter(
      new DependentColumnFilter(b("f"), b("b"), true))));
    step("filter multi row range", () -> scan(t, scanWith(new MultiRowRangeFilter(Arrays.asList(
      new MultiRowRangeFilter.RowRange(b("r02"), true, b("r04"), false),
      new MultiRowRangeFilter.RowRange(b("r15"), false, b("r17"), true))))));
    step("filter fuzzy row", () -> scan(t, scanWith(new FuzzyRowFilter(Arrays.asList(
      new Pair<>(b("r?3"), new byte[] { 0, 1, 0 }))))));
    step("filter list all", () -> scan(t, scanWith(new FilterList(FilterList.Operator.MUST_PASS_ALL,
      new PrefixFilter(b("r1")), new QualifierFilter(CompareOperator.EQUAL, new BinaryComparator(b("b")))))));
    step("filter list one", () -> scan(t, new Scan(some).setFilter(new FilterList(
      FilterList.Operator.MUST_PASS_ONE, new QualifierFilter(CompareOperator.EQUAL,
        new BinaryComparator(b("x"))), new ValueFilter(CompareOperator.EQUAL,
        new BinaryComparator(b("b2")))))));
    step("filter while match", () -> scan(t, scanWith(new WhileMatchFilter(new RowFilter(
      CompareOperator.NOT_EQUAL, new BinaryComparator(b("r04")))))));
    step("filter skip", () -> scan(t, new Scan(some).setFilter(new SkipFilter(new ValueFilter(
      CompareOperator.NOT_EQUAL, new BinaryComparator(b("b2")))))));
    step("filter random row all", () -> scan(t, new Scan(some).setFilter(new RandomRowFilter(1.0f))));
    step("filter random row none", () -> scan(t, new Scan(some).setFilter(new RandomRowFilter(0.0f))));
    step("filter on get", () -> t.get(getWith("r04", new QualifierFilter(CompareOperator.EQUAL,
      new BinaryComparator(b("b"))))));
    step("filter page with limit", () -> scan(t, scanWith(new PageFilter(5)).setLimit(2)));
    step("filter bit comparator", () -> scan(t, scanWith(new ValueFilter(CompareOperator.EQUAL,
      new BitComparator(b("b"), BitComparator.BitwiseOp.AND)))));

    step("increment", () -> t.increment(new Increment(b("c1")).addColumn(b("f"), b("n"), 5)
      .addColumn(b("f"), b("m"), 1)));
    step("increment again", () -> t.increment(new Increment(b("c1")).addColumn(b("f"), b("n"), -2)));
    step("increment column value", () -> t.incrementColumnValue(b("c1"), b("f"), b("n"), 10));
    step("increment read back", () -> {
      Result r = t.get(new Get(b("c1")).addColumn(b("f"), b("n")));
      return Bytes.toLong(r.getValue(b("f"), b("n")));
    });
    step("increment a non-counter", () -> t.increment(new Increment(b("r00")).addColumn(b("f"), b("a"), 1)));
    step("append", () -> t.append(new Append(b("c1")).addColumn(b("f"), b("s"), b("ab"))));
    step("append again", () -> t.append(new Append(b("c1")).addColumn(b("f"), b("s"), b("cd"))));

    step("check and mutate equal", () -> t.checkAndMutate(b("r00"), b("f")).qualifier(b("b"))
      .ifEquals(b("b0")).thenPut(new Put(b("r00")).addColumn(b("f"), b("b"), 150, b("b0-new"))));
    step("check and mutate equal read", () -> t.get(new Get(b("r00")).addColumn(b("f"), b("b"))));
    step("check and mutate fails", () -> t.checkAndMutate(b("r00"), b("f")).qualifier(b("b"))
      .ifEquals(b("b0")).thenPut(new Put(b("r00")).addColumn(b("f"), b("b"), 160, b("never"))));
    step("check and mutate not exists", () -> t.checkAndMutate(b("r01"), b("f")).qualifier(b("b"))
      .ifNotExists().thenPut(new Put(b("r01")).addColumn(b("f"), b("b"), 100, b("b1"))));
    step("check and mutate not exists fails", () -> t.checkAndMutate(b("r02"), b("f")).qualifier(b("b"))
      .ifNotExists().thenPut(new Put(b("r02")).addColumn(b("f"), b("b"), 100, b("never"))));
    step("check and mutate empty value", () -> t.checkAndMutate(b("r03"), b("f")).qualifier(b("b"))
      .ifEquals(new byte[0]).thenPut(new Put(b("r03")).addColumn(b("f"), b("b"), 100, b("b3"))));
    step("check and mutate less", () -> t.checkAndMutate(b("r05"), b("f")).qualifier(b("c"))
      .ifMatches(CompareOperator.LESS, b("cc4")).thenDelete(new Delete(b("r05")).addColumns(b("f"), b("c"))));
    step("check and mutate greater", () -> t.checkAndMutate(b("r05"), b("f")).qualifier(b("c"))
      .ifMatches(CompareOperator.GREATER, b("cc4")).thenDelete(new Delete(b("r05")).addColumns(b("f"), b("c"))));
    step("check and mutate read", () -> t.get(new Get(b("r05"))));
    step("check and mutate row mutations", () -> {
      RowMutations rm = new RowMutations(b("r06"));
      rm.add(new Put(b("r06")).addColumn(b("f"), b("d"), 100, b("d6")));
      rm.add(new Delete(b("r06")).addColumn(b("f"), b("a")));
      return t.checkAndMutate(b("r06"), b("f")).qualifier(b("b")).ifEquals(b("b6")).thenMutate(rm);
    });
    step("check and mutate row mutations read", () -> t.get(new Get(b("r06")).readAllVersions()));

    step("mutate row", () -> {
      RowMutations rm = new RowMutations(b("r07"));
      rm.add(new Put(b("r07")).addColumn(b("f"), b("e"), 100, b("e7")));
      rm.add(new Delete(b("r07")).addColumn(b("f"), b("a")));
      t.mutateRow(rm);
      return t.get(new Get(b("r07")).readAllVersions());
    });

    step("delete newest version", () -> {
      t.delete(new Delete(b("r08")).addColumn(b("f"), b("a")));
      return t.get(new Get(b("r08")).readAllVersions());
    });
    step("delete one version", () -> {
      t.delete(new Delete(b("r09")).addColumn(b("f"), b("a"), 100));
      return t.get(new Get(b("r09")).readAllVersions());
    });
    step("delete columns", () -> {
      t.delete(new Delete(b("r10")).addColumns(b("f"), b("a")));
      return t.get(new Get(b("r10")).readAllVersions());
    });
    step("delete columns up to", () -> {
      t.delete(new Delete(b("r11")).addColumns(b("f"), b("a"), 150));
      return t.get(new Get(b("r11")).readAllVersions());
    });
    step("delete family", () -> {
      t.delete(new Delete(b("r12")).addFamily(b("f")));
      return t.get(new Get(b("r12")).readAllVersions());
    });
    step("delete family up to", () -> {
      t.delete(new Delete(b("r13")).addFamily(b("f"), 150));
      return t.get(new Get(b("r13")).readAllVersions());
    });
    step("delete family version", () -> {
      t.delete(new Delete(b("r14")).addFamilyVersion(b("f"), 200));
      return t.get(new Get(b("r14")).readAllVersions());
    });
    step("delete row", () -> {
      t.delete(new Delete(b("r15")));
      return t.get(new Get(b("r15")));
    });
    step("delete row up to", () -> {
      t.delete(new Delete(b("r16"), 150));
      return t.get(new Get(b("r16")).readAllVersions());
    });
    step("delete list", () -> {
      t.delete(new ArrayList<>(Arrays.asList(new Delete(b("r17")), new Delete(b("r18")))));
      return scan(t, new Scan().withStartRow(b("r16")).withStopRow(b("r19")));
    });
    step("put after delete row", () -> {
      t.put(new Put(b("r15")).addColumn(b("f"), b("a"), 100, b("back")));
      return t.get(new Get(b("r15")));
    });
    step("scan after everything", () -> scan(t, new Scan().readAllVersions()));
    t.close();

    step("admin truncate", () -> {
      admin.disableTable(name);
      admin.truncateTable(name, true);
      return admin.isTableEnabled(name) + " " + scan(conn.getTable(name), new Scan());
    });
    step("admin delete", () -> {
      admin.disableTable(name);
      admin.deleteTable(name);
      return admin.tableExists(name);
    });
    step("admin get from a deleted table", () -> conn.getTable(name).get(new Get(b("r00"))));
    out.println("done");
  }
}
