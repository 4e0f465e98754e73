import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Sanitizer;

/** Kafka's {@code Sanitizer}: {"op": "sanitize"|"desanitize", "s": "..."} -> {"out": "..."}. */
public final class SanitizerOracle {
    public static void main(String[] args) throws Exception {
        OracleLoop.run((req, json) -> {
            String s = req.get("s").asText();
            ObjectNode out = json.createObjectNode();
            switch (req.get("op").asText()) {
                case "sanitize": out.put("out", Sanitizer.sanitize(s)); break;
                case "desanitize": out.put("out", Sanitizer.desanitize(s)); break;
                default: throw new IllegalArgumentException("unknown op " + req.get("op"));
            }
            return out;
        });
    }
}
