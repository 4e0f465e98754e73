import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.Measurable;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.utils.Time;

import java.lang.reflect.Method;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Kafka's metric naming, as a broker registers its quota sensors: tags built as the broker builds them (the user
 * {@code Sanitizer.sanitize}d, the client-id raw, an ip as {@code InetAddress.getHostAddress}, empty tags left in
 * for JmxReporter to drop), metrics registered through Kafka's own {@code JmxReporter} on the platform MBeanServer
 * under the broker's {@code kafka.server} namespace. Run with the JMX exporter agent attached, the agent serves
 * them as a broker's would be served.
 *
 * <p>{"op": "register", "metrics": [{"kind": "client"|"ip"|"listener", "group", "name", "user", "client_id",
 * "ip", "listener", "value"}]} -> {"mbeans": [ObjectName], "ips": [host address]}; {"op": "clear"} -> {}.
 */
public final class JmxNamingOracle {
    /** Kafka's {@code Sanitizer}: {@code org.apache.kafka.common.utils}, in {@code .internals} from 4.4. */
    private static Class<?> sanitizer() throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.utils.internals.Sanitizer");
        } catch (ClassNotFoundException e) {
            return Class.forName("org.apache.kafka.common.utils.Sanitizer");
        }
    }

    public static void main(String[] args) throws Exception {
        Method sanitize = sanitizer().getMethod("sanitize", String.class);
        Method jmxSanitize = sanitizer().getMethod("jmxSanitize", String.class);
        List<MetricsReporter> reporters = Collections.singletonList(new JmxReporter());
        Metrics metrics = new Metrics(new MetricConfig(), reporters, Time.SYSTEM, new KafkaMetricsContext("kafka.server"));
        List<MetricName> registered = new ArrayList<>();
        OracleLoop.run((req, json) -> {
            ObjectNode out = json.createObjectNode();
            switch (req.get("op").asText()) {
                case "clear":
                    for (MetricName m : registered) {
                        metrics.removeMetric(m);
                    }
                    registered.clear();
                    return out;
                case "register":
                    ArrayNode mbeans = out.putArray("mbeans");
                    ArrayNode ips = out.putArray("ips");
                    for (JsonNode m : req.get("metrics")) {
                        Map<String, String> tags = new LinkedHashMap<>();
                        String group = m.get("group").asText();
                        switch (m.get("kind").asText()) {
                            case "client":  // ClientQuotaManager's quotaMetricTags: user, then client-id
                                tags.put("user", (String) sanitize.invoke(null, m.get("user").asText()));
                                tags.put("client-id", m.get("client_id").asText());
                                break;
                            case "ip":  // ConnectionQuotas: the address the connection came from
                                String ip = InetAddress.getByName(m.get("ip").asText()).getHostAddress();
                                tags.put("ip", ip);
                                ips.add(ip);
                                break;
                            case "listener":
                                tags.put("listener", m.get("listener").asText());
                                break;
                            default:
                                throw new IllegalArgumentException("unknown kind " + m.get("kind"));
                        }
                        MetricName name = metrics.metricName(m.get("name").asText(), group, "", tags);
                        double value = m.get("value").asDouble();
                        metrics.addMetric(name, (Measurable) (config, now) -> value);
                        registered.add(name);
                        StringBuilder mbean = new StringBuilder("kafka.server:type=").append(group);
                        for (Map.Entry<String, String> t : tags.entrySet()) {  // as JmxReporter names it
                            if (!t.getKey().isEmpty() && !t.getValue().isEmpty()) {
                                mbean.append(',').append(t.getKey()).append('=')
                                    .append((String) jmxSanitize.invoke(null, t.getValue()));
                            }
                        }
                        mbeans.add(mbean.toString());
                    }
                    return out;
                default:
                    throw new IllegalArgumentException("unknown op " + req.get("op"));
            }
        });
    }
}
