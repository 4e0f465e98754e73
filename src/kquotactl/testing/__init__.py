"""Real servers for tests, the demo and benchmarks (like ``kazoo.testing``): ZooKeeper and Kafka run
from Maven Central jars with the machine's Java, on 127.0.0.1, in throw-away directories."""
