# SPDX-License-Identifier: GPL-3.0-or-later
# Installation extras and the Debian package (issue: installable like a Debian desktop application):
# man pages generated from --help with help2man, bash completion, AppStream metainfo, the licence, and
# CPack's DEB generator with shlibdeps. `./build.sh package` builds and checks the .deb.
include(GNUInstallDirs)

# Man pages: quantscope-cli(1) always, quantscope(1) with the GUI; help2man reads `--help` and `--version`.
find_program(QS_HELP2MAN help2man)
if(QS_HELP2MAN)
  set(qs_man_dir ${CMAKE_BINARY_DIR}/man)
  add_custom_command(OUTPUT ${qs_man_dir}/quantscope-cli.1
    COMMAND ${CMAKE_COMMAND} -E make_directory ${qs_man_dir}
    COMMAND ${QS_HELP2MAN} --no-info --no-discard-stderr --section=1
            "--name=number formats and quantization from the command line"
            --include=${PROJECT_SOURCE_DIR}/resources/man/quantscope-cli.h2m
            --output=${qs_man_dir}/quantscope-cli.1 $<TARGET_FILE:quantscope-cli>
    DEPENDS quantscope-cli ${PROJECT_SOURCE_DIR}/resources/man/quantscope-cli.h2m VERBATIM)
  set(qs_man_pages ${qs_man_dir}/quantscope-cli.1)
  if(QS_BUILD_GUI)
    add_custom_command(OUTPUT ${qs_man_dir}/quantscope.1
      COMMAND ${CMAKE_COMMAND} -E make_directory ${qs_man_dir}
      COMMAND ${CMAKE_COMMAND} -E env QT_QPA_PLATFORM=offscreen
              ${QS_HELP2MAN} --no-info --no-discard-stderr --section=1
              "--name=explorer for number formats and quantization"
              --include=${PROJECT_SOURCE_DIR}/resources/man/quantscope.h2m
              --output=${qs_man_dir}/quantscope.1 $<TARGET_FILE:quantscope>
      DEPENDS quantscope ${PROJECT_SOURCE_DIR}/resources/man/quantscope.h2m VERBATIM)
    list(APPEND qs_man_pages ${qs_man_dir}/quantscope.1)
  endif()
  # Installed compressed (gzip -9n: no name or time stamp, so the package is reproducible).
  set(qs_man_gz)
  foreach(page IN LISTS qs_man_pages)
    add_custom_command(OUTPUT ${page}.gz COMMAND gzip -9nkf ${page} DEPENDS ${page} VERBATIM)
    list(APPEND qs_man_gz ${page}.gz)
  endforeach()
  add_custom_target(qs_man_pages ALL DEPENDS ${qs_man_gz})
  install(FILES ${qs_man_gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "QuantScope: help2man not found, no man pages (Debian: help2man)")
endif()

install(FILES ${PROJECT_SOURCE_DIR}/resources/quantscope-cli.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME quantscope-cli)
if(QS_BUILD_GUI)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/io.github.quantscope.QuantScope.metainfo.xml
          DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
endif()
# Debian's documentation files: the machine-readable copyright and the (gzipped) changelog.
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/changelog.gz
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/resources/debian/changelog > ${CMAKE_BINARY_DIR}/changelog.gz
  DEPENDS ${PROJECT_SOURCE_DIR}/resources/debian/changelog)
add_custom_target(qs_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/changelog.gz)
install(FILES ${PROJECT_SOURCE_DIR}/resources/debian/copyright ${CMAKE_BINARY_DIR}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/quantscope)

# The Debian package: CPU-only (the CUDA backend stays a build option), dependencies from the binaries.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME quantscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "QuantScope developers")
set(CPACK_PACKAGE_CONTACT "QuantScope developers <quantscope@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "explorer for number formats and quantization (FP8/FP6/FP4, int8)")
set(CPACK_PACKAGE_DESCRIPTION
    "QuantScope shows what number formats and quantization do to real tensors:\nevery FP8/FP6/FP4 variant, E8M0, custom ExMy and int8/int4, encoded\nbit-exactly; per-tensor, per-channel and block schemes (MX, NVFP4, llama.cpp\nblock formats) compared on model files with error histograms and SQNR\ntables; a Fashion-MNIST training lab with fake quantization; int8 GEMM\ntimings. A desktop GUI (quantscope) and a command line (quantscope-cli).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)
include(CPack)
