import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.quota.ClientQuotaEntity;

import java.util.HashMap;
import java.util.Map;

/**
 * The iteration order of the hash maps kafka-configs prints from (DescribeClientQuotasResponse.complete).
 *
 * {"initial": n, "strings": [...]} -> {"order": [index, ...]} of {@code new HashMap<String, Double>(n)} filled in
 * that order; {"initial": n, "entities": [[[type, name|null], ...], ...]} -> the same for
 * {@code new HashMap<ClientQuotaEntity, _>(n)} (each entity's own map filled in the given order).
 */
public final class HashMapOrderOracle {
    public static void main(String[] args) throws Exception {
        OracleLoop.run((req, json) -> {
            int initial = req.get("initial").asInt();
            ObjectNode out = json.createObjectNode();
            ArrayNode order = out.putArray("order");
            if (req.has("strings")) {
                Map<String, Integer> map = new HashMap<>(initial);
                int i = 0;
                for (JsonNode s : req.get("strings")) {
                    map.put(s.asText(), i++);
                }
                for (Integer index : map.values()) {
                    order.add(index);
                }
            } else {
                Map<ClientQuotaEntity, Integer> map = new HashMap<>(initial);
                int i = 0;
                for (JsonNode e : req.get("entities")) {
                    Map<String, String> parts = new HashMap<>(e.size());
                    for (JsonNode p : e) {
                        parts.put(p.get(0).asText(), p.get(1).isNull() ? null : p.get(1).asText());
                    }
                    map.put(new ClientQuotaEntity(parts), i++);
                }
                for (Integer index : map.values()) {
                    order.add(index);
                }
            }
            return out;
        });
    }
}
