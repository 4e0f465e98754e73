import com.fasterxml.jackson.databind.node.ObjectNode;
import scala.collection.StringOps$;

/**
 * How a ZooKeeper-mode broker reads a stored quota value (ConfigHandler): Scala's {@code StringOps.toLong} for
 * producer/consumer_byte_rate ({@code .toLong.toDouble}), {@code .toDouble} for request_percentage and
 * controller_mutation_rate, {@code .toInt} for connection_creation_rate (IpConfigHandler).
 * {"type": "LONG"|"INT"|"DOUBLE", "s": "..."} -> {"value": "<Java toString of a LONG/INT, raw IEEE bits in hex of a DOUBLE>"}.
 */
public final class StoredValueOracle {
    public static void main(String[] args) throws Exception {
        OracleLoop.run((req, json) -> {
            String s = req.get("s").asText();
            ObjectNode out = json.createObjectNode();
            switch (req.get("type").asText()) {
                case "LONG": out.put("value", Long.toString(StringOps$.MODULE$.toLong$extension(s))); break;
                case "INT": out.put("value", Integer.toString(StringOps$.MODULE$.toInt$extension(s))); break;
                case "DOUBLE": out.put("value", Long.toHexString(Double.doubleToRawLongBits(StringOps$.MODULE$.toDouble$extension(s)))); break;
                default: throw new IllegalArgumentException("unknown type " + req.get("type"));
            }
            return out;
        });
    }
}
