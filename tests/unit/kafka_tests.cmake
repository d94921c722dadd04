# Kafka and ingest tests: each starts an embedded broker in-process, so they
# need no services. Included from tests/CMakeLists.txt.

add_executable(test_kafka ${CMAKE_CURRENT_LIST_DIR}/test_kafka.c)
target_link_libraries(test_kafka PRIVATE cs_clients cs_core)
add_test(NAME unit.kafka COMMAND test_kafka)

add_executable(test_webhook ${CMAKE_CURRENT_LIST_DIR}/test_webhook.c)
target_link_libraries(test_webhook PRIVATE cs_ingest cs_core)
add_test(NAME unit.webhook COMMAND test_webhook)

# kafka.properties and kafka.topic_prefix: the config file, librdkafka's
# verdict at start, secrets by reference, the names.
add_executable(test_kafka_config ${CMAKE_CURRENT_LIST_DIR}/test_kafka_config.c)
target_link_libraries(test_kafka_config PRIVATE cs_clients cs_core)
add_test(NAME unit.kafka_config COMMAND test_kafka_config)

set_tests_properties(unit.webhook unit.kafka_config PROPERTIES TIMEOUT 60)
# librdkafka's mock coordinator waits about 9 s for each member joining a
# group that had one; the test joins six, so it takes 50 s, more under the
# sanitizers.
set_tests_properties(unit.kafka PROPERTIES TIMEOUT 180)
