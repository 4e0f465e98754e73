import kafka.server.QuotaFactory;
import org.apache.kafka.common.utils.Time;

import java.util.Properties;

/**
 * Which quota applies on a Kafka 3.9 broker (request and answer: PrecedenceOracleSupport), its quotas fed exactly as
 * the broker feeds them: with "mode": "zk" (the default) through the ZooKeeper config handlers (PrecedenceOracleZk),
 * with "mode": "kraft" through the KRaft metadata publisher's ClientQuotaMetadataManager (PrecedenceOracleKraft).
 */
public final class PrecedenceOracle {
    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        base.put("zookeeper.connect", "127.0.0.1:1");
        PrecedenceOracleSupport.run(
            base,
            (config, metrics) -> QuotaFactory.instantiate(config, metrics, Time.SYSTEM, "oracle"),
            (b, req, remove) -> {
                if (req.path("mode").asText("zk").equals("kraft")) PrecedenceOracleKraft.install(b, req, remove);
                else PrecedenceOracleZk.install(b, req, remove);
            });
    }
}
