import kafka.server.QuotaFactory;
import org.apache.kafka.common.utils.Time;

import java.util.Properties;

/**
 * Which quota applies on a Kafka 4.x (KRaft) broker (request and answer: PrecedenceOracleSupport), its quotas fed
 * exactly as the broker's metadata publisher feeds them (PrecedenceOracleKraft).
 */
public final class PrecedenceOracle {
    public static void main(String[] args) throws Exception {
        Properties base = new Properties();
        base.put("process.roles", "broker");
        base.put("node.id", "1");
        base.put("controller.listener.names", "CONTROLLER");
        base.put("controller.quorum.bootstrap.servers", "127.0.0.1:1");
        base.put("listeners", "PLAINTEXT://127.0.0.1:0");
        base.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        PrecedenceOracleSupport.run(
            base,
            (config, metrics) -> QuotaFactory.instantiate(config, metrics, Time.SYSTEM, "oracle", "broker"),
            PrecedenceOracleKraft::install);
    }
}
