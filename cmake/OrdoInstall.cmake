# cmake --install plus find_package(ordo): exports ordo::ordo (engine + models + tokenizer).
include(CMakePackageConfigHelpers)
install(TARGETS ordo ordo_engine ordo_models ordo_tokenizer EXPORT ordoTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY engine/include/ordo models/include/ordo tokenizer/include/ordo
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ordoTargets NAMESPACE ordo:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
configure_package_config_file(cmake/ordoConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ordoConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ordoConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ordoConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ordoConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ordo)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/stories260K DESTINATION ${CMAKE_INSTALL_DATADIR}/ordo/models)
# The position-scheme zoo for `ordo compare` (share/ordo/models/zoo), when the tree has it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/zoo DESTINATION ${CMAKE_INSTALL_DATADIR}/ordo/models OPTIONAL)
