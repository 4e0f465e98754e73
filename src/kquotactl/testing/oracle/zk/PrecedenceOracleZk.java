import com.fasterxml.jackson.databind.JsonNode;
import kafka.server.IpConfigHandler;
import kafka.server.QuotaConfigHandler;
import org.apache.kafka.common.utils.Sanitizer;
import scala.Option;

import java.util.Properties;

/**
 * PrecedenceOracle's quotas installed as a ZooKeeper broker's config handlers do: QuotaConfigHandler.updateQuotaConfig
 * with the znode's sanitized names and string Properties; IpConfigHandler for ips.
 */
final class PrecedenceOracleZk {
    static Option<String> zkName(JsonNode entity, String part) {
        if (!entity.has(part)) return Option.empty();
        JsonNode n = entity.get(part);
        return Option.apply(n.isNull() ? "<default>" : Sanitizer.sanitize(n.asText()));
    }

    static void install(PrecedenceOracleSupport.Broker b, JsonNode req, boolean remove) throws Exception {
        QuotaConfigHandler handler = new QuotaConfigHandler(b.managers);
        IpConfigHandler ipHandler = new IpConfigHandler(b.connections);
        for (JsonNode q : req.get("quotas")) {
            JsonNode entity = q.get("entity");
            Properties props = PrecedenceOracleSupport.properties(new Properties(), remove ? null : q.get("config"));
            if (entity.has("ip")) {
                JsonNode ip = entity.get("ip");
                ipHandler.processConfigChanges(ip.isNull() ? "<default>" : ip.asText(), props);
            } else {
                handler.updateQuotaConfig(zkName(entity, "user"), zkName(entity, "client-id"), props);
            }
        }
    }
}
