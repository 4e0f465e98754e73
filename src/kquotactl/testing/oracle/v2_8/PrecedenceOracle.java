import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kafka.network.ConnectionQuotas;
import kafka.server.ClientQuotaManager;
import kafka.server.IpConfigHandler;
import kafka.server.KafkaConfig;
import kafka.server.QuotaConfigHandler;
import kafka.server.QuotaFactory;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Sanitizer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaType;
import scala.Option;

import java.lang.reflect.Field;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;

/**
 * Which quota applies on a Kafka 2.8 (ZooKeeper) broker: its real QuotaManagers (QuotaFactory, from a KafkaConfig
 * with the static quota.producer.default / quota.consumer.default) and ConnectionQuotas, fed exactly as the broker's
 * config handlers feed them (QuotaConfigHandler.updateQuotaConfig with the znode's sanitized names and string
 * Properties; IpConfigHandler for ips).
 *
 * Request: {"static": {"quota.producer.default": "5000", ...}, "quotas": [{"entity": {"user": "u"|null,
 * "client-id": "c"|null, "ip": "1.2.3.4"|null}, "config": {"producer_byte_rate": "1024", ...}}],
 * "connections": [{"user": "u", "client-id": "c"}], "ips": ["1.2.3.4"]} (null: the default entity; a missing
 * part: absent). Answer: {"connections": [[{"limit": bound, "user": tag, "client-id": tag} per key]], "ips": [rate]}.
 * The overrides are removed again (through the same handlers) after each request, and the managers' "levels ever
 * configured" bits reset to their initial value (by reflection: the broker never clears them), so every request
 * sees a broker that has heard of exactly its quotas.
 */
public final class PrecedenceOracle {
    static final String[] KEYS = {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"};

    static final class Broker {
        QuotaFactory.QuotaManagers managers;
        ConnectionQuotas connections;
        ClientQuotaManager[] byKey;
        ClientQuotaCallback[] callbacks;
        ClientQuotaType[] types;
        int[] initialBits;
    }

    static final Map<String, Broker> BROKERS = new HashMap<>();
    static Field bitsField;

    static Field field(Class<?> cls, String suffix) {
        for (Field f : cls.getDeclaredFields()) {
            if (f.getName().equals(suffix) || f.getName().endsWith("$" + suffix)) {
                f.setAccessible(true);
                return f;
            }
        }
        throw new IllegalStateException("no field " + suffix + " in " + cls);
    }

    static Broker broker(JsonNode statics) throws Exception {
        String key = statics == null ? "{}" : statics.toString();
        Broker b = BROKERS.get(key);
        if (b != null) return b;
        Properties props = new Properties();
        props.put("zookeeper.connect", "127.0.0.1:1");
        if (statics != null) {
            Iterator<Map.Entry<String, JsonNode>> it = statics.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                props.put(e.getKey(), e.getValue().asText());
            }
        }
        KafkaConfig config = KafkaConfig.fromProps(props);
        Metrics metrics = new Metrics();
        b = new Broker();
        b.managers = QuotaFactory.instantiate(config, metrics, Time.SYSTEM, "oracle");
        b.connections = new ConnectionQuotas(config, Time.SYSTEM, metrics);
        b.byKey = new ClientQuotaManager[] {b.managers.produce(), b.managers.fetch(), b.managers.request(), b.managers.controllerMutation()};
        b.callbacks = new ClientQuotaCallback[4];
        b.types = new ClientQuotaType[4];
        b.initialBits = new int[4];
        bitsField = field(ClientQuotaManager.class, "quotaTypesEnabled");
        Field cb = field(ClientQuotaManager.class, "quotaCallback");
        Field ty = field(ClientQuotaManager.class, "clientQuotaType");
        for (int i = 0; i < 4; i++) {
            b.callbacks[i] = (ClientQuotaCallback) cb.get(b.byKey[i]);
            b.types[i] = (ClientQuotaType) ty.get(b.byKey[i]);
            b.initialBits[i] = bitsField.getInt(b.byKey[i]);
        }
        BROKERS.put(key, b);
        return b;
    }

    static Option<String> zkName(JsonNode entity, String part) {
        if (!entity.has(part)) return Option.empty();
        JsonNode n = entity.get(part);
        return Option.apply(n.isNull() ? "<default>" : Sanitizer.sanitize(n.asText()));
    }

    static void install(Broker b, JsonNode quotas, boolean remove) throws Exception {
        QuotaConfigHandler handler = new QuotaConfigHandler(b.managers);
        IpConfigHandler ipHandler = new IpConfigHandler(b.connections);
        for (JsonNode q : quotas) {
            JsonNode entity = q.get("entity");
            Properties props = new Properties();
            if (!remove) {
                Iterator<Map.Entry<String, JsonNode>> it = q.get("config").fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    props.put(e.getKey(), e.getValue().asText());
                }
            }
            if (entity.has("ip")) {
                JsonNode ip = entity.get("ip");
                ipHandler.processConfigChanges(ip.isNull() ? "<default>" : ip.asText(), props);
            } else {
                handler.updateQuotaConfig(zkName(entity, "user"), zkName(entity, "client-id"), props);
            }
        }
    }

    static JsonNode answer(Broker b, JsonNode req, ObjectMapper json) throws Exception {
        ObjectNode out = json.createObjectNode();
        ArrayNode conns = out.putArray("connections");
        for (JsonNode c : req.get("connections")) {
            KafkaPrincipal principal = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, c.get("user").asText());
            String clientId = c.get("client-id").asText();
            ArrayNode perKey = conns.addArray();
            for (int i = 0; i < 4; i++) {
                Map<String, String> tags = b.callbacks[i].quotaMetricTags(b.types[i], principal, clientId);
                ObjectNode a = perKey.addObject();
                a.put("key", KEYS[i]);
                a.put("limit", b.byKey[i].quota(principal, clientId).bound());
                a.put("user", tags.get("user"));
                a.put("client-id", tags.get("client-id"));
            }
        }
        ArrayNode ips = out.putArray("ips");
        for (JsonNode ip : req.path("ips")) {
            ips.add(b.connections.connectionRateForIp(InetAddress.getByName(ip.asText())));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        OracleLoop.run((req, json) -> {
            Broker b = broker(req.get("static"));
            try {
                install(b, req.get("quotas"), false);
                return answer(b, req, json);
            } finally {
                install(b, req.get("quotas"), true);
                for (int i = 0; i < 4; i++) bitsField.setInt(b.byKey[i], b.initialBits[i]);
            }
        });
        for (Broker b : BROKERS.values()) {
            b.connections.close();
        }
        System.exit(0);  // the managers' reaper threads are not daemons; shutting them down takes a poll each
    }
}
