import kafka.server.QuotaFactory;
import org.apache.kafka.common.utils.Time;

import java.util.Properties;

/**
 * Which quota applies on a Kafka 2.8 (ZooKeeper) broker (request and answer: PrecedenceOracleSupport), its quotas
 * fed exactly as the broker's config handlers feed them (PrecedenceOracleZk).
 */
public final class PrecedenceOracle {
    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        base.put("zookeeper.connect", "127.0.0.1:1");
        PrecedenceOracleSupport.run(
            base, (config, metrics) -> QuotaFactory.instantiate(config, metrics, Time.SYSTEM, "oracle"), PrecedenceOracleZk::install);
    }
}
