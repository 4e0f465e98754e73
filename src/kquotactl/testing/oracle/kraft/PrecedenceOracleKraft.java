import com.fasterxml.jackson.databind.JsonNode;
import kafka.server.metadata.ClientQuotaMetadataManager;
import org.apache.kafka.common.metadata.ClientQuotaRecord;
import org.apache.kafka.image.ClientQuotasDelta;
import org.apache.kafka.image.ClientQuotasImage;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * PrecedenceOracle's quotas installed as a KRaft broker's metadata publisher does: ClientQuotaMetadataManager.update
 * with a ClientQuotasDelta replayed from ClientQuotaRecords (raw names, null for the default, double values).
 */
final class PrecedenceOracleKraft {
    static void install(PrecedenceOracleSupport.Broker b, JsonNode req, boolean remove) throws Exception {
        ClientQuotasDelta delta = new ClientQuotasDelta(ClientQuotasImage.EMPTY);
        for (JsonNode q : req.get("quotas")) {
            JsonNode entity = q.get("entity");
            List<ClientQuotaRecord.EntityData> data = new ArrayList<>();
            for (String part : new String[] {"user", "client-id", "ip"}) {
                if (entity.has(part)) {
                    JsonNode n = entity.get(part);
                    data.add(new ClientQuotaRecord.EntityData().setEntityType(part).setEntityName(n.isNull() ? null : n.asText()));
                }
            }
            Iterator<Map.Entry<String, JsonNode>> it = q.get("config").fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                delta.replay(new ClientQuotaRecord().setEntity(data).setKey(e.getKey())
                    .setValue(remove ? 0.0 : Double.parseDouble(e.getValue().asText())).setRemove(remove));
            }
        }
        apply(new ClientQuotaMetadataManager(b.managers, b.connections), delta);
    }

    /** {@code update(delta)} up to 4.1; from 4.2 the manager is a {@code Consumer<ClientQuotasDelta>}. */
    private static void apply(ClientQuotaMetadataManager manager, ClientQuotasDelta delta) throws Exception {
        Method m;
        try {
            m = ClientQuotaMetadataManager.class.getMethod("update", ClientQuotasDelta.class);
        } catch (NoSuchMethodException e) {
            m = ClientQuotaMetadataManager.class.getMethod("accept", Object.class);
        }
        try {
            m.invoke(manager, delta);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
    }
}
