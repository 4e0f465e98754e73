import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;

/**
 * The loop every oracle driver runs: one JSON request per line on stdin, one JSON answer per line on stdout,
 * in order. An exception thrown by Kafka's code is an answer too: {"error": "<simple class name>", "message": ...}.
 * Kept free of any Kafka class so that it compiles against every version's jars.
 */
public final class OracleLoop {
    public interface Handler {
        JsonNode handle(JsonNode request, ObjectMapper json) throws Exception;
    }

    private OracleLoop() {}

    public static void run(Handler handler) throws Exception {
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                out.flush();  // an empty line asks for everything answered so far
                continue;
            }
            JsonNode answer;
            try {
                answer = handler.handle(json.readTree(line), json);
            } catch (Exception e) {
                ObjectNode err = json.createObjectNode();
                err.put("error", e.getClass().getSimpleName());
                err.put("message", String.valueOf(e.getMessage()));
                answer = err;
            }
            out.write(json.writeValueAsString(answer));
            out.write('\n');
            if (!in.ready()) {
                out.flush();
            }
        }
        out.flush();
    }
}
