# Embeds a file in C: cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# writes `const unsigned char NAME[]` (the bytes plus a NUL) and
# `const size_t NAME_len` (without the NUL). No xxd, no build step beyond CMake.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "/* generated from ${IN} by cmake/embed.cmake */\n#include <stddef.h>\n"
     "const unsigned char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_len = ${len};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
