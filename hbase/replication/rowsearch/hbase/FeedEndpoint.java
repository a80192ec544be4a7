package rowsearch.hbase;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.replication.BaseReplicationEndpoint;
import org.apache.hadoop.hbase.wal.WAL;
import org.apache.hadoop.hbase.wal.WALEdit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * rowsearch as a replication peer of the HBase it indexes: every put and
 * delete HBase ships for a table whose families have REPLICATION_SCOPE 1
 * (whatever client made it, whatever timestamp it carries) becomes an entry
 * of rowsearch's change feed in the table's namespace (`rowsearch_feed`, the
 * layout in store/FORMAT.md, "The change feed in HBase"), which every
 * rowsearch process reads. A batch is acknowledged to HBase only once its
 * entries are written; until then HBase keeps it in its queue and ships it
 * again, so nothing is lost to a crash of either side. An entry names a
 * row, not what changed: a reader reads the row as HBase has it, so an
 * entry applied twice changes nothing. A namespace without a feed table
 * has no rowsearch table left (a dropped namespace): its entries are let go.
 */
public class FeedEndpoint extends BaseReplicationEndpoint {
  private static final Logger LOG = LoggerFactory.getLogger(FeedEndpoint.class);
  /** The feed table in each namespace, and its family and qualifier. */
  static final String FEED = "rowsearch_feed";
  private static final byte[] FAMILY = "f".getBytes(StandardCharsets.UTF_8);
  private static final byte[] QUALIFIER = "w".getBytes(StandardCharsets.UTF_8);
  /** A peer of its own: not the cluster's id, so HBase ships to it. */
  private static final UUID PEER = UUID.nameUUIDFromBytes("rowsearch-feed".getBytes(StandardCharsets.UTF_8));

  private volatile Connection connection;

  @Override
  public UUID getPeerUUID() {
    return PEER;
  }

  @Override
  public boolean canReplicateToSameCluster() {
    return true;
  }

  @Override
  public void start() {
    startAsync();
  }

  @Override
  public void stop() {
    stopAsync();
  }

  @Override
  protected void doStart() {
    try {
      connection = ConnectionFactory.createConnection(ctx.getConfiguration());
      notifyStarted();
    } catch (IOException e) {
      notifyFailed(e);
    }
  }

  @Override
  protected void doStop() {
    Connection c = connection;
    connection = null;
    if (c != null) {
      try {
        c.close();
      } catch (IOException e) {
        LOG.warn("closing the connection", e);
      }
    }
    notifyStopped();
  }

  @Override
  public boolean replicate(ReplicateContext context) {
    Connection c = connection;
    if (c == null) {
      return false;
    }
    // The rows each batch touched, per namespace, in the order shipped.
    Map<String, Set<ByteBuffer>> rows = new HashMap<>();
    for (WAL.Entry entry : context.getEntries()) {
      TableName table = entry.getKey().getTableName();
      if (table.isSystemTable() || table.getQualifierAsString().equals(FEED)) {
        continue;
      }
      Set<ByteBuffer> keys = rows.computeIfAbsent(table.getNamespaceAsString(), n -> new LinkedHashSet<>());
      byte[] name = table.getQualifier();
      for (Cell cell : entry.getEdit().getCells()) {
        if (CellUtil.matchingFamily(cell, WALEdit.METAFAMILY)) {
          continue;
        }
        byte[] row = CellUtil.cloneRow(cell);
        ByteBuffer key = ByteBuffer.allocate(name.length + 1 + row.length);
        key.put(name).put((byte) 0).put(row).flip();
        keys.add(key);
      }
    }
    long now = System.currentTimeMillis();
    try {
      for (Map.Entry<String, Set<ByteBuffer>> e : rows.entrySet()) {
        if (e.getValue().isEmpty()) {
          continue;
        }
        List<Put> puts = new ArrayList<>(e.getValue().size());
        for (ByteBuffer tail : e.getValue()) {
          byte[] key = new byte[8 + tail.remaining()];
          ByteBuffer.wrap(key).putLong(now).put(tail.duplicate());
          puts.add(new Put(key).addColumn(FAMILY, QUALIFIER, new byte[0]));
        }
        TableName name = TableName.valueOf(e.getKey(), FEED);
        try (Admin admin = c.getAdmin()) {
          // No feed: no rowsearch table in that namespace any more (it
          // makes the feed with its first table), nothing to follow.
          if (!admin.tableExists(name)) {
            continue;
          }
        }
        try (Table feed = c.getTable(name)) {
          feed.put(puts);
        }
      }
      return true;
    } catch (IOException e) {
      // HBase ships the batch again after its back-off.
      LOG.warn("rowsearch feed not written, the batch stays in HBase's queue", e);
      return false;
    }
  }
}
