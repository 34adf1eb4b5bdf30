# Firmware hygiene of a static library (the Cortex-M archive): fails when it
# references or defines anything a bare-metal program must not need:
#   heap          malloc, free, ..., operator new / delete
#   exceptions    __cxa_throw, personality and unwinder routines
#   RTTI          typeinfo, __dynamic_cast
#   stdio         printf and friends, puts, fwrite, stdout, iostream
#   static init   static constructors or destructors (.init_array, .ctors,
#                 _GLOBAL__sub_I_*, __cxa_atexit, guarded local statics)
#   OS            getenv, threads (pthread, OpenMP)
# Run as: cmake -DNM=arm-none-eabi-nm -DOBJDUMP=arm-none-eabi-objdump
#               -DLIB=libedgeattn.a -P check_firmware_library.cmake
foreach(var NM OBJDUMP LIB)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_firmware_library.cmake needs -D${var}=...")
  endif()
endforeach()

execute_process(COMMAND ${NM} -A -C ${LIB} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
list(LENGTH lines count)
if(count LESS 10)
  message(FATAL_ERROR "only ${count} lines from nm: is ${LIB} the library?")
endif()

set(heap "malloc|calloc|realloc|free|memalign|posix_memalign|aligned_alloc|valloc|pvalloc|_malloc_r|_free_r|_calloc_r|_realloc_r|_sbrk|sbrk|operator new.*|operator delete.*")
set(exceptions "__cxa_throw|__cxa_rethrow|__cxa_allocate_exception|__cxa_free_exception|__cxa_begin_catch|__cxa_end_catch|__cxa_call_unexpected|__gxx_personality_v0|__aeabi_unwind_cpp_pr[0-9]|_Unwind_.*|std::terminate.*|std::__throw_.*")
set(rtti "typeinfo for .*|typeinfo name for .*|__dynamic_cast|vtable for __cxxabiv1::.*")
set(stdio "printf|fprintf|sprintf|snprintf|vprintf|vfprintf|vsprintf|vsnprintf|iprintf|fiprintf|siprintf|sniprintf|_printf_r|_vfprintf_r|_svfprintf_r|__sprintf_chk|__snprintf_chk|__printf_chk|__fprintf_chk|puts|fputs|fputc|putc|putchar|fwrite|fflush|fopen|fclose|perror|stdin|stdout|stderr|std::cout|std::cerr|std::clog|std::ios_base.*|std::basic_ostream.*|std::basic_istream.*")
set(static_init "_GLOBAL__sub_I_.*|_GLOBAL__sub_D_.*|__cxa_atexit|__aeabi_atexit|atexit|__cxa_guard_acquire|__cxa_guard_release|__cxa_guard_abort")
set(os "getenv|pthread_.*|omp_.*|GOMP_.*")

set(found "")
foreach(line IN LISTS lines)
  # "lib.a:member.o:00000000 T name" or "lib.a:member.o:         U name"
  if(NOT line MATCHES "^([^:]*:[^:]*):[ 0-9a-fA-F]* ([A-Za-z]) (.+)$")
    continue()
  endif()
  set(where "${CMAKE_MATCH_1}")
  set(type "${CMAKE_MATCH_2}")
  set(name "${CMAKE_MATCH_3}")
  foreach(group heap exceptions rtti stdio static_init os)
    if(name MATCHES "^(${${group}})(\\(.*)?$")
      list(APPEND found "${group}: ${type} ${name}   (${where})")
    endif()
  endforeach()
endforeach()

# Static constructors also show as sections, whatever their symbols.
execute_process(COMMAND ${OBJDUMP} -h ${LIB} OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^\n]+" section_lines "${sections}")
set(member "")
foreach(line IN LISTS section_lines)
  if(line MATCHES "^In archive")
    continue()
  elseif(line MATCHES "^([^ ]+):[ \t]+file format")
    set(member "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^[ \t]*[0-9]+[ \t]+(\\.init_array|\\.preinit_array|\\.ctors|\\.fini_array|\\.dtors)[. \t]")
    list(APPEND found "static_init: section ${CMAKE_MATCH_1}   (${member})")
  endif()
endforeach()

if(found)
  list(REMOVE_DUPLICATES found)
  string(REPLACE ";" "\n  " shown "${found}")
  message(FATAL_ERROR "${LIB} has what firmware must not:\n  ${shown}")
endif()
message(STATUS "${LIB}: ${count} symbol lines; no heap, exceptions, RTTI, stdio, static constructors or OS calls")
