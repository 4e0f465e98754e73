import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * What Kafka's own validation makes of one quota value, on every write target of one Kafka version.
 *
 * Request: {"key": k, "entity": "users"|"clients"|"ips", "stored": string|null, "wire": double|null,
 * "text": string|null}.
 *
 * - "stored" is the string a tool writes to ZooKeeper: checked with the ZooKeeper-mode broker's and kafka-configs'
 *   {@code DynamicConfig.Client/User/Ip.validate} (ConfigDef parse, types and validators). Absent in 4.x (no ZooKeeper).
 * - "wire" is the double an AlterClientQuotas request carries: checked with the KRaft controller's own
 *   {@code ClientQuotaControlManager.alterClientQuotas} (package-private, called by reflection); the answer
 *   carries the value of the record it would write.
 * - "text" is what a person typed for kafka-configs: {@code --zookeeper} parses it with DynamicConfig,
 *   {@code --bootstrap-server} with {@code toDouble} (Double.parseDouble) and sends it to the controller.
 *
 * A parsed double comes back as its IEEE bits (a decimal string, exact) and as Double.toString.
 */
public final class QuotaValueOracle {
    private static Object controller;
    private static Method alter;

    public static void main(String[] args) throws Exception {
        Class<?> cls = Class.forName("org.apache.kafka.controller.ClientQuotaControlManager");
        SnapshotRegistry registry = new SnapshotRegistry(new LogContext());
        for (Constructor<?> c : cls.getDeclaredConstructors()) {
            Class<?>[] p = c.getParameterTypes();
            c.setAccessible(true);
            if (p.length == 1 && p[0] == SnapshotRegistry.class) {
                controller = c.newInstance(registry);
            } else if (p.length == 2 && p[0] == LogContext.class && p[1] == SnapshotRegistry.class) {
                controller = c.newInstance(new LogContext(), registry);
            }
        }
        if (controller == null) {
            throw new IllegalStateException("no known ClientQuotaControlManager constructor");
        }
        alter = cls.getDeclaredMethod("alterClientQuotas", java.util.Collection.class);
        alter.setAccessible(true);

        OracleLoop.run((req, json) -> {
            String key = req.get("key").asText();
            String type = req.get("entity").asText();
            ObjectNode out = json.createObjectNode();
            JsonNode stored = req.get("stored");
            if (stored != null && !stored.isNull()) {
                out.set("zk", dynamicConfig(json, type, key, stored.asText()));
            }
            JsonNode wire = req.get("wire");
            if (wire != null && !wire.isNull()) {
                out.set("kraft", kraft(json, type, key, wire.asDouble()));
            }
            JsonNode text = req.get("text");
            if (text != null && !text.isNull()) {
                String t = text.asText();
                out.set("text_zk", dynamicConfig(json, type, key, t));
                ObjectNode bs = json.createObjectNode();
                double d;
                try {
                    d = Double.parseDouble(t);  // ConfigCommand --bootstrap-server: value.toDouble
                } catch (NumberFormatException e) {
                    bs.put("ok", false);
                    bs.put("error", "Cannot parse quota configuration value for " + key + ": " + t);
                    out.set("text_kraft", bs);
                    return out;
                }
                out.set("text_kraft", kraft(json, type, key, d));
            }
            return out;
        });
    }

    private static ObjectNode dynamicConfig(ObjectMapper json, String type, String key, String value) throws Exception {
        ObjectNode out = json.createObjectNode();
        String object = type.equals("users") ? "User" : type.equals("clients") ? "Client" : "Ip";
        Class<?> cls;
        try {
            cls = Class.forName("kafka.server.DynamicConfig$" + object + "$");
        } catch (ClassNotFoundException e) {
            return null;  // Kafka 4: no ZooKeeper mode
        }
        Object module = cls.getField("MODULE$").get(null);
        Properties props = new Properties();
        props.setProperty(key, value);
        try {
            @SuppressWarnings("unchecked")
            Map<String, Object> parsed = (Map<String, Object>) cls.getMethod("validate", Properties.class).invoke(module, props);
            out.put("ok", true);
            putValue(out, parsed.get(key));
        } catch (java.lang.reflect.InvocationTargetException e) {
            out.put("ok", false);
            out.put("error", e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        }
        return out;
    }

    private static ObjectNode kraft(ObjectMapper json, String type, String key, double value) throws Exception {
        ObjectNode out = json.createObjectNode();
        Map<String, String> parts = new HashMap<>();
        parts.put(type.equals("users") ? ClientQuotaEntity.USER : type.equals("clients") ? ClientQuotaEntity.CLIENT_ID
                : ClientQuotaEntity.IP, type.equals("ips") ? "192.0.2.1" : "e");
        ClientQuotaEntity entity = new ClientQuotaEntity(parts);
        ClientQuotaAlteration alteration = new ClientQuotaAlteration(entity,
                Collections.singletonList(new ClientQuotaAlteration.Op(key, value)));
        Object result = alter.invoke(controller, Collections.singletonList(alteration));
        @SuppressWarnings("unchecked")
        Map<ClientQuotaEntity, ApiError> response = (Map<ClientQuotaEntity, ApiError>) call(result, "response");
        ApiError error = response.get(entity);
        if (error != null && error.isFailure()) {
            out.put("ok", false);
            out.put("error", error.error().name() + ": " + error.message());
            return out;
        }
        List<?> records = (List<?>) call(result, "records");
        out.put("ok", true);
        if (records.size() == 1) {
            Object message = call(records.get(0), "message");
            putValue(out, call(message, "value"));
        }
        return out;
    }

    /** A public method of a class that may not be public itself (ControllerResult is package-private). */
    private static Object call(Object target, String name) throws Exception {
        Method m = target.getClass().getMethod(name);
        m.setAccessible(true);
        return m.invoke(target);
    }

    private static void putValue(ObjectNode out, Object v) {
        if (v instanceof Double) {
            double d = (Double) v;
            out.put("type", "double");
            out.put("bits", Long.toString(Double.doubleToRawLongBits(d)));
            out.put("value", Double.toString(d));
        } else {
            out.put("type", v == null ? "null" : v.getClass().getSimpleName());
            out.put("value", String.valueOf(v));
        }
    }
}
