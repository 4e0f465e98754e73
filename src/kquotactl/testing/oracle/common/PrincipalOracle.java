import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.security.kerberos.KerberosName;
import org.apache.kafka.common.security.kerberos.KerberosShortNamer;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

import javax.security.auth.x500.X500Principal;
import java.util.ArrayList;
import java.util.List;

/**
 * Kafka's principal mappers.
 * {"op": "ssl", "rules": "...", "names": [...]}: SslPrincipalMapper.fromRules(rules).getName(each);
 * {"op": "kerberos", "rules": [...], "realm": "...", "names": [...]}: KerberosShortNamer.fromUnparsedRules(realm,
 * rules).shortName(KerberosName.parse(each)); {"op": "list", "s": "..."}: ConfigDef's LIST parsing;
 * {"op": "x500", "s": "..."}: new X500Principal(s).getName() (RFC 2253, as the broker's SSL layer prints a DN);
 * {"op": "regex", "p": ..., "r": ..., "s": [...]}: Pattern.compile(p), then per text matches(), replaceAll(r) and
 * replaceFirst(r) (or their exception's class).
 * Answers: {"error": ...} when the rules are rejected, else {"out": [{"name": ...} | {"error": ...}, ...]}.
 */
public final class PrincipalOracle {
    private interface Mapper {
        String map(String name) throws Exception;
    }

    private static ObjectNode each(com.fasterxml.jackson.databind.ObjectMapper json, JsonNode names, Mapper mapper) {
        ObjectNode answer = json.createObjectNode();
        ArrayNode out = answer.putArray("out");
        for (JsonNode n : names) {
            ObjectNode one = out.addObject();
            try {
                one.put("name", mapper.map(n.asText()));
            } catch (Exception e) {
                one.put("error", e.getClass().getSimpleName());
                one.put("message", String.valueOf(e.getMessage()));
            }
        }
        return answer;
    }

    public static void main(String[] args) throws Exception {
        OracleLoop.run((req, json) -> {
            switch (req.get("op").asText()) {
                case "ssl": {
                    SslPrincipalMapper mapper = SslPrincipalMapper.fromRules(req.get("rules").asText());
                    return each(json, req.get("names"), mapper::getName);
                }
                case "kerberos": {
                    List<String> rules = new ArrayList<>();
                    for (JsonNode r : req.get("rules")) rules.add(r.asText());
                    KerberosShortNamer namer = KerberosShortNamer.fromUnparsedRules(req.get("realm").asText(), rules);
                    return each(json, req.get("names"), n -> namer.shortName(KerberosName.parse(n)));
                }
                case "list": {
                    ObjectNode answer = json.createObjectNode();
                    ArrayNode out = answer.putArray("out");
                    for (Object s : (List<?>) ConfigDef.parseType("rules", req.get("s").asText(), ConfigDef.Type.LIST))
                        out.add(String.valueOf(s));
                    return answer;
                }
                case "regex": {
                    java.util.regex.Pattern pattern = java.util.regex.Pattern.compile(req.get("p").asText());
                    String replacement = req.get("r").asText();
                    ObjectNode answer = json.createObjectNode();
                    ArrayNode out = answer.putArray("out");
                    for (JsonNode n : req.get("s")) {
                        String text = n.asText();
                        ObjectNode one = out.addObject();
                        one.put("matches", pattern.matcher(text).matches());
                        try {
                            one.put("all", pattern.matcher(text).replaceAll(replacement));
                        } catch (RuntimeException e) {
                            one.put("all_error", e.getClass().getSimpleName());
                        }
                        try {
                            one.put("first", pattern.matcher(text).replaceFirst(replacement));
                        } catch (RuntimeException e) {
                            one.put("first_error", e.getClass().getSimpleName());
                        }
                    }
                    return answer;
                }
                case "x500": {
                    ObjectNode answer = json.createObjectNode();
                    answer.put("out", new X500Principal(req.get("s").asText()).getName());
                    return answer;
                }
                default:
                    throw new IllegalArgumentException("unknown op " + req.get("op"));
            }
        });
    }
}
