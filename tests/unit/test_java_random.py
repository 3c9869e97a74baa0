"""Ballast's java.util.Random (services.placement.java_random) against figures printed by a JVM (OpenJDK 17):
``new Random(42)``'s first nextInt(10)s, Collections.shuffle of 0..9 with ``new Random(7)``, String.hashCode, and a
HashMap<Optional<String>, ?>'s key order."""

from services.placement.java_random import JavaRandom, hashmap_order, java_string_hash


def test_the_generator_draws_javas_numbers() -> None:
    rng = JavaRandom(42)
    assert [rng.next_int(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    items = list(range(10))
    JavaRandom(7).shuffle(items)
    assert items == [0, 1, 9, 3, 7, 4, 8, 5, 2, 6]


def test_string_hashes_and_hashmap_order_are_javas() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("/dc1/r1") == 1718852235
    keys = ["/dc2/r1", "/dc1/r1", None, "/dc1/r2", "rackA", "zz", "/dc3/r9/h1"]
    assert hashmap_order(keys) == [None, "zz", "/dc1/r1", "/dc3/r9/h1", "/dc2/r1", "rackA", "/dc1/r2"]
