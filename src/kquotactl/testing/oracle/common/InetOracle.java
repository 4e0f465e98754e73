import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * How a broker keys an ip quota: {@code InetAddress.getByName(name)} (ZooKeeper-mode {@code IpConfigHandler},
 * KRaft's {@code ClientQuotaMetadataManager}; the same call validates in {@code isValidIpEntity}).
 * {"s": "..."} -> {"kind": "address", "family": 4|6, "hex": "<address bytes>"}
 *              | {"kind": "resolver"}  (not a literal: the name went to the name service)
 *              | {"kind": "invalid"}   (UnknownHostException without asking the name service).
 * The name service is a hosts file with no entries, so nothing here depends on DNS; a lookup is recognised by the
 * name-service frame on the exception's stack.
 * Each answer also carries what Kafka's own validators say where the version has them (they call getByName too):
 * "zk_valid" from {@code DynamicConfig.Ip.isValidIpEntity} (ZooKeeper-mode admin path, kafka-configs; 2.8, 3.9)
 * and "kraft_valid" from {@code ClientQuotaControlManager.isValidIpEntity} (KRaft controller; 3.x, 4.x).
 */
public final class InetOracle {
    public static void main(String[] args) throws Exception {
        File empty = File.createTempFile("inet-oracle-hosts", ".txt");
        empty.deleteOnExit();
        System.setProperty("jdk.net.hosts.file", empty.getAbsolutePath());
        // no negative cache: a cached failure would not show the name-service frame the second time
        java.security.Security.setProperty("networkaddress.cache.negative.ttl", "0");
        Method zk = validator("kafka.server.DynamicConfig$Ip$");
        Object zkModule = zk == null ? null : zk.getDeclaringClass().getField("MODULE$").get(null);
        Method kraftOrInstance = validator("org.apache.kafka.controller.ClientQuotaControlManager");
        Method kraft = kraftOrInstance != null && Modifier.isStatic(kraftOrInstance.getModifiers())
            ? kraftOrInstance : null;  // 2.8's early-access controller has an instance method: not a broker path
        OracleLoop.run((req, json) -> {
            String s = req.get("s").asText();
            ObjectNode out = json.createObjectNode();
            if (zk != null) out.put("zk_valid", (Boolean) zk.invoke(zkModule, s));
            if (kraft != null) out.put("kraft_valid", (Boolean) kraft.invoke(null, s));
            try {
                InetAddress a = InetAddress.getByName(s);
                out.put("kind", "address");
                out.put("family", a instanceof Inet4Address ? 4 : 6);
                StringBuilder hex = new StringBuilder();
                for (byte b : a.getAddress()) hex.append(String.format("%02x", b & 0xff));
                out.put("hex", hex.toString());
            } catch (UnknownHostException e) {
                boolean lookedUp = false;
                for (Throwable t = e; t != null && !lookedUp; t = t.getCause()) {
                    for (StackTraceElement f : t.getStackTrace()) {
                        if (f.getMethodName().equals("getAddressesFromNameService")) lookedUp = true;
                    }
                }
                out.put("kind", lookedUp ? "resolver" : "invalid");
            }
            return out;
        });
    }

    /** {@code isValidIpEntity(String)} of a class on this version's classpath, or null if it has none. */
    private static Method validator(String className) {
        try {
            Method m = Class.forName(className).getDeclaredMethod("isValidIpEntity", String.class);
            m.setAccessible(true);
            return m;
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }
}
