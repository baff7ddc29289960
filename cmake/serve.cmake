# lowbit serve (src/serve/, docs/serve.md): libmicrohttpd for HTTP and cJSON
# for JSON, both from the distribution (Debian: libmicrohttpd-dev,
# libcjson-dev), found with pkg-config. Without them the rest of lowbit
# builds as before and `lowbit serve` says what it lacks.
option(LOWBIT_SERVE "Build lowbit serve where libmicrohttpd and cJSON are found" ON)
set(LOWBIT_HAVE_SERVE OFF)
# a cross build would find the host's .pc files: only with LOWBIT_SERVE_CROSS=ON
# (and PKG_CONFIG_LIBDIR pointing at the target's) is the server built there
if(CMAKE_CROSSCOMPILING AND NOT LOWBIT_SERVE_CROSS)
  set(LOWBIT_SERVE OFF)
endif()
if(LOWBIT_SERVE)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(LOWBIT_MHD QUIET IMPORTED_TARGET libmicrohttpd)
    pkg_check_modules(LOWBIT_CJSON QUIET IMPORTED_TARGET libcjson)
  endif()
  find_package(Threads)
  if(LOWBIT_MHD_FOUND AND LOWBIT_CJSON_FOUND AND Threads_FOUND)
    set(LOWBIT_HAVE_SERVE ON)
  endif()
endif()
if(LOWBIT_HAVE_SERVE)
  message(STATUS "lowbit serve: libmicrohttpd ${LOWBIT_MHD_VERSION}, cJSON ${LOWBIT_CJSON_VERSION}")
  file(GLOB LOWBIT_SERVE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/serve/*.c)
  # the chat page, embedded in the binary as a byte array
  set(page_c ${CMAKE_BINARY_DIR}/serve_page.c)
  add_custom_command(OUTPUT ${page_c}
    COMMAND ${CMAKE_COMMAND} -DIN=${CMAKE_SOURCE_DIR}/src/serve/chat.html -DOUT=${page_c} -DNAME=lb_serve_page
            -P ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/src/serve/chat.html ${CMAKE_SOURCE_DIR}/cmake/embed.cmake
    COMMENT "Embedding the chat page (src/serve/chat.html)" VERBATIM)
  target_sources(lowbit_cli PRIVATE ${LOWBIT_SERVE_SOURCES} ${page_c})
  target_compile_definitions(lowbit_cli PRIVATE LOWBIT_HAVE_SERVE=1)
  target_link_libraries(lowbit_cli PRIVATE PkgConfig::LOWBIT_MHD PkgConfig::LOWBIT_CJSON Threads::Threads)
elseif(CMAKE_CROSSCOMPILING AND NOT LOWBIT_SERVE_CROSS)
  message(STATUS "lowbit serve: not built in a cross build (-DLOWBIT_SERVE_CROSS=ON to try)")
else()
  message(STATUS "lowbit serve: not built (needs libmicrohttpd and cJSON: apt-get install libmicrohttpd-dev libcjson-dev)")
endif()
