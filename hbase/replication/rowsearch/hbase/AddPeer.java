package rowsearch.hbase;

import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.replication.ReplicationPeerConfig;

/**
 * Adds the replication peer `rowsearch` ({@link FeedEndpoint}, every user
 * table whose families have REPLICATION_SCOPE 1) to the HBase that
 * hbase-site.xml on the class path names, unless it is there already.
 * `hbase shell` does the same with
 * `add_peer 'rowsearch', ENDPOINT_CLASSNAME => 'rowsearch.hbase.FeedEndpoint'`.
 * With a second argument `disable` or `enable`, disables or enables the
 * peer instead (`disable_peer 'rowsearch'`: HBase keeps the writes queued
 * until it is enabled again).
 */
public final class AddPeer {
  private AddPeer() {}

  public static void main(String[] args) throws Exception {
    String id = args.length > 0 ? args[0] : "rowsearch";
    Configuration conf = HBaseConfiguration.create();
    try (Connection connection = ConnectionFactory.createConnection(conf);
        Admin admin = connection.getAdmin()) {
      if (args.length > 1 && args[1].equals("disable")) {
        admin.disableReplicationPeer(id);
        System.out.println("peer " + id + " disabled");
        return;
      }
      if (args.length > 1 && args[1].equals("enable")) {
        admin.enableReplicationPeer(id);
        System.out.println("peer " + id + " enabled");
        return;
      }
      if (!admin.listReplicationPeers(Pattern.compile(Pattern.quote(id))).isEmpty()) {
        System.out.println("peer " + id + " already there");
        return;
      }
      ReplicationPeerConfig peer = ReplicationPeerConfig.newBuilder()
          .setReplicationEndpointImpl(FeedEndpoint.class.getName())
          .setReplicateAllUserTables(true)
          .build();
      admin.addReplicationPeer(id, peer);
      System.out.println("peer " + id + " added");
    }
  }
}
