import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kafka.network.ConnectionQuotas;
import kafka.server.ClientQuotaManager;
import kafka.server.KafkaConfig;
import kafka.server.QuotaFactory;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.quota.ClientQuotaCallback;
import org.apache.kafka.server.quota.ClientQuotaType;

import java.lang.reflect.Field;
import java.net.InetAddress;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;

/**
 * The version-independent part of PrecedenceOracle (each version's PrecedenceOracle supplies how to build the
 * QuotaManagers and how quotas reach them: PrecedenceOracleZk, PrecedenceOracleKraft): which quota applies on a
 * broker, from its real QuotaManagers (QuotaFactory, from a KafkaConfig with the static quota.producer.default /
 * quota.consumer.default where the version has them) and ConnectionQuotas, one broker per distinct static config.
 *
 * Request: {"static": {"quota.producer.default": "5000", ...}, "quotas": [{"entity": {"user": "u"|null,
 * "client-id": "c"|null, "ip": "1.2.3.4"|null}, "config": {"producer_byte_rate": "1024", ...}}],
 * "connections": [{"user": "u", "client-id": "c"}], "ips": ["1.2.3.4"]} (null: the default entity; a missing
 * part: absent). Answer: {"connections": [[{"limit": bound, "user": tag, "client-id": tag} per key]], "ips": [rate]}.
 * The overrides are removed again (through the same handlers) after each request, and the managers' "levels ever
 * configured" bits reset to their initial value (by reflection: the broker never clears them), so every request
 * sees a broker that has heard of exactly its quotas.
 */
final class PrecedenceOracleSupport {
    static final String[] KEYS = {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"};

    static final class Broker {
        QuotaFactory.QuotaManagers managers;
        ConnectionQuotas connections;
        ClientQuotaManager[] byKey;
        ClientQuotaCallback[] callbacks;
        ClientQuotaType[] types;
        int[] initialBits;
    }

    /** QuotaFactory.instantiate, whose signature differs between versions. */
    interface Managers {
        QuotaFactory.QuotaManagers instantiate(KafkaConfig config, Metrics metrics) throws Exception;
    }

    /** Sets (remove: false) or removes (remove: true) the request's quotas as the version's broker does. */
    interface Installer {
        void install(Broker b, JsonNode req, boolean remove) throws Exception;
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

    /** A JSON object's fields as string Properties (added to {@code props}). */
    static Properties properties(Properties props, JsonNode object) {
        if (object != null) {
            Iterator<Map.Entry<String, JsonNode>> it = object.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                props.put(e.getKey(), e.getValue().asText());
            }
        }
        return props;
    }

    static Broker broker(JsonNode statics, Properties base, Managers managers) throws Exception {
        String key = statics == null ? "{}" : statics.toString();
        Broker b = BROKERS.get(key);
        if (b != null) return b;
        Properties props = new Properties();
        props.putAll(base);
        KafkaConfig config = KafkaConfig.fromProps(properties(props, statics));
        Metrics metrics = new Metrics();
        b = new Broker();
        b.managers = managers.instantiate(config, metrics);
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

    /** The driver's main: {@code base} is the broker config every request starts from (before "static"). */
    static void run(Properties base, Managers managers, Installer installer) throws Exception {
        OracleLoop.run((req, json) -> {
            Broker b = broker(req.get("static"), base, managers);
            // "after_remove": answer once the quotas are removed again: which quota types each manager still has
            // enabled ("bits_left": a type never cleared, as before KAFKA-19282) and the quota-ids it then uses
            boolean afterRemove = req.path("after_remove").asBoolean(false);
            boolean removed = false;
            try {
                installer.install(b, req, false);
                if (afterRemove) {
                    installer.install(b, req, true);
                    removed = true;
                    ObjectNode out = (ObjectNode) answer(b, req, json);
                    boolean left = false;
                    for (int i = 0; i < 4; i++) left |= bitsField.getInt(b.byKey[i]) != b.initialBits[i];
                    out.put("bits_left", left);
                    return out;
                }
                return answer(b, req, json);
            } finally {
                if (!removed) installer.install(b, req, true);
                for (int i = 0; i < 4; i++) bitsField.setInt(b.byKey[i], b.initialBits[i]);
            }
        });
        for (Broker b : BROKERS.values()) {
            b.connections.close();
        }
        System.exit(0);  // the managers' reaper threads are not daemons; shutting them down takes a poll each
    }
}
