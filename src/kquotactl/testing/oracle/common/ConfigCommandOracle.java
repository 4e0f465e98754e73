import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Exit;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Kafka's own {@code kafka.admin.ConfigCommand} (kafka-configs.sh), run in-process many times in one JVM.
 *
 * Request: {"args": ["--zookeeper", "...", "--describe", ...]} -> {"exit": code, "out": stdout, "err": stderr}.
 * {@code Exit.exit} is turned into an exception, so an error ends one command, not the JVM.
 */
public final class ConfigCommandOracle {
    private static final class ExitCalled extends RuntimeException {
        final int code;

        ExitCalled(int code) {
            super("exit " + code);
            this.code = code;
        }
    }

    public static void main(String[] argv) throws Exception {
        Exit.setExitProcedure((code, message) -> {
            throw new ExitCalled(code);
        });
        Exit.setHaltProcedure((code, message) -> {
            throw new ExitCalled(code);
        });
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        OracleLoop.run((req, json) -> {
            List<String> args = new ArrayList<>();
            for (JsonNode a : req.get("args")) {
                args.add(a.asText());
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code = 0;
            System.setOut(new PrintStream(out, true, "UTF-8"));
            System.setErr(new PrintStream(err, true, "UTF-8"));
            try {
                // Scala's println goes to Console.out, captured once: redirect it too (a dynamic variable)
                scala.Console$.MODULE$.withOut(out, () -> scala.Console$.MODULE$.withErr(err, () -> {
                    kafka.admin.ConfigCommand.main(args.toArray(new String[0]));
                    return null;
                }));
            } catch (ExitCalled e) {
                code = e.code;
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", code);
            answer.put("out", new String(out.toByteArray(), StandardCharsets.UTF_8));
            answer.put("err", new String(err.toByteArray(), StandardCharsets.UTF_8));
            return answer;
        });
    }
}
